"""RUN_CMD's jail: started as ``python -I -S ps_launcher.py CONFIG_JSON STATUS_FD PROGRAM ARG...``.

Run by runtime/ps_cmd.py (never imported by the broker). It applies, in this order:

  netns         a new network namespace (sandbox_worker.hardening.apply_netns): no network,
                not even the host's loopback;
  no_new_privs  no setuid/file-capability gain through exec;
  rlimits       no core dumps, CPU seconds, address space, file size, open files;

closes every descriptor but 0-2, then execs PROGRAM (an absolute path, no shell). If a layer
cannot be applied or the exec fails, it writes the reason to STATUS_FD (close-on-exec, so a
successful exec leaves it empty) and exits 127: the command never runs half-jailed.
"""

import json
import os
import resource
import sys


def fail(fd: int, message: str) -> None:
    try:
        os.write(fd, message.encode("utf-8", "replace")[:4000])
    finally:
        os._exit(127)


def main() -> None:
    config = json.loads(sys.argv[1])
    status_fd = int(sys.argv[2])
    argv = sys.argv[3:]
    sys.path.insert(0, config["repo"])
    try:
        from sandbox_worker import hardening
    except Exception as exc:  # noqa: BLE001
        fail(status_fd, f"cannot load the hardening layers ({type(exc).__name__})")
    status = hardening.apply_namespaces({"netns"})["netns"]
    if not hardening.is_active(status):
        fail(status_fd, f"no network namespace for the command ({status})")
    status = hardening.apply_no_new_privs()
    if not hardening.is_active(status):
        fail(status_fd, f"no_new_privs could not be set ({status})")
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        cpu = int(config["cpu_seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        memory = int(config["memory_bytes"])
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        fsize = int(config["file_bytes"])
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    except (OSError, ValueError) as exc:
        fail(status_fd, f"rlimits could not be set ({exc})")
    os.set_inheritable(status_fd, False)
    os.closerange(3, status_fd)
    os.closerange(status_fd + 1, 1 << 16)
    try:
        os.execve(argv[0], argv, config["env"])
    except OSError as exc:
        fail(status_fd, f"cannot execute {os.path.basename(argv[0])}: {exc.strerror}")


if __name__ == "__main__":
    main()
