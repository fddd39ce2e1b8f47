"""The one filesystem layer: the Sandbox policy (mounts, modes, approvals), the virtual
filesystem every path goes through, and the descriptor-based opens beneath them."""
