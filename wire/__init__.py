"""What the broker (runtime/) and the worker (sandbox_worker/) share: the frames and the op
table (protocol), the hardening layers' names and statuses (layers). Stdlib only: the worker
imports it before it is jailed, and it imports nothing of either side."""
