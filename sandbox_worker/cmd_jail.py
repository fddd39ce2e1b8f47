"""RUN_CMD's jail: the process that puts an allowlisted command in a jail of its own, then execs it.

Started by runtime/promptscript/command.py as `python -I -S -B -c <bootstrap> CONFIG_JSON STATUS_FD PROGRAM ARG...`
(never imported by the broker). An allowlisted program can run anything that program can
(`git -c alias.x='!sh ...' x`), so the jail, not the allowlist, keeps the host safe:

  user      never root and never a capability: as root, the command runs as nobody (65534) with
            no groups and the project is mounted idmapped so that its owner's files are
            nobody's inside; unprivileged, a new user namespace maps the caller to uid 1000.
  netns     a new network namespace: no network, no abstract unix socket of the host.
  ipcns     a new IPC namespace. utsns: a new UTS namespace named "sandbox".
  pidns     a new PID namespace whose pid 1 is the command: when it ends, or when this launcher
            ends (PR_SET_PDEATHSIG), the kernel ends every process left in it.
  mountns   a new root (tmpfs) holding only the system's program directories and /etc
            (read-only), the command's own installation when it lives elsewhere (read-only),
            the project at /project (read-write), a private /tmp, /dev/null, zero, random and
            urandom, and the namespace's own /proc; nothing else of the host exists there, path
            unix sockets included.
  landlock  the same view again as Landlock rules (read/execute the system, write the project
            and /tmp), where the kernel has Landlock.
  seccomp   a deny list of kernel attack surface a command never needs: mounts and namespaces,
            ptrace and cross-process memory, keyrings, bpf, perf, io_uring, modules, reboot.
  rlimits   no core, CPU seconds, address space, file size, 256 descriptors.

Each layer is attempted; what cannot be applied is reported. Before exec, the launcher writes
one line to STATUS_FD (close-on-exec): "layers {json}" with each layer's status, or "error
<reason>" when the command must not run (a layer failed under isolation strict, or the exec).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys

from sandbox_worker import seccomp
from sandbox_worker.hardening import CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWUSER, CLONE_NEWUTS, HOSTNAME
from wire.layers import is_active

CLONE_NEWNS = 0x00020000
NOBODY = 65534
INSIDE_UID = 1000
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
DEVICES = ("null", "zero", "random", "urandom")
NEW_ROOT = "/tmp"  # a mount point inside the new mount namespace only (the host's /tmp is untouched)

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MNT_DETACH = 2
SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR, SYS_PIVOT_ROOT = 428, 429, 442, 155
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC, AT_RECURSIVE, AT_EMPTY_PATH = 1, 0o2000000, 0x8000, 0x1000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_IDMAP = 0x100000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 1, 4, 38, 24
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_RULE_PATH_BENEATH = 1
READ_EXECUTE = 0b1 | 0b100 | 0b1000  # EXECUTE, READ_FILE, READ_DIR
DENIED_GROUPS = ("mounts and namespaces", "kernel attack surface", "system administration")
DENIED_EXTRA = {"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312}
# Programs call these: the UTS namespace already hides the host's name; glibc may seal memory.
NOT_DENIED = {"uname", "sysinfo", "mseal", "personality"}

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
libc.syscall.restype = ctypes.c_long


class Refused(Exception):
    """A layer failed: the reason, for the status line."""


def check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise Refused(f"{what}: {os.strerror(err)}")
    return result


def mount(source, target: str, fstype, flags: int, data=None) -> None:
    enc = (lambda v: v.encode() if isinstance(v, str) else v)
    check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


# ---------------------------------------------------------------- detached trees

MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4


def clone_tree(path: str, attrs: int = 0, userns: int = 0) -> int:
    """A detached copy of the mount tree at `path` (open_tree(OPEN_TREE_CLONE)), with `attrs`
    set on it (read-only, an idmap through `userns`): taken before the new root hides `path`."""
    tree = check(libc.syscall(ctypes.c_long(SYS_OPEN_TREE), ctypes.c_int(-100), path.encode(),
                              ctypes.c_uint(OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)), f"open_tree {path}")
    if attrs:
        attr = (ctypes.c_uint64 * 4)(attrs, 0, 0, userns)  # struct mount_attr: set, clr, propagation, userns_fd
        check(libc.syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(tree), b"", ctypes.c_uint(AT_EMPTY_PATH | AT_RECURSIVE),
                           attr, ctypes.c_size_t(32)), f"mount_setattr {path}")
    return tree


def place(tree: int, target: str) -> None:
    check(libc.syscall(ctypes.c_long(SYS_MOVE_MOUNT), ctypes.c_int(tree), b"", ctypes.c_int(-100), target.encode(),
                       ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH)), f"move_mount {target}")
    os.close(tree)


def idmap_userns(uid: int, gid: int) -> int:
    """A descriptor of a user namespace mapping 0 -> uid: the idmap of the project's mount, so
    that the files its owner, root, owns are `uid`'s through it."""
    ready_r, ready_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(ready_r)
        os.write(ready_w, b"1" if libc.unshare(CLONE_NEWUSER) == 0 else b"0")
        os.close(ready_w)
        import time

        time.sleep(30)  # held until the parent has its descriptor, then killed
        os._exit(0)
    os.close(ready_w)
    try:
        if os.read(ready_r, 1) != b"1":
            raise Refused("unshare(CLONE_NEWUSER) for the project's idmap failed")
        with open(f"/proc/{child}/uid_map", "w") as f:
            f.write(f"0 {uid} 1\n")
        with open(f"/proc/{child}/setgroups", "w") as f:
            f.write("deny")
        with open(f"/proc/{child}/gid_map", "w") as f:
            f.write(f"0 {gid} 1\n")
        return os.open(f"/proc/{child}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise Refused(f"the project's idmap: {exc.strerror}") from None
    finally:
        os.close(ready_r)
        os.kill(child, 9)
        os.waitpid(child, 0)


def take_trees(project: str, extra: list[str], idmap: int | None) -> dict[str, int]:
    """Every tree the new root is made of, by its path there."""
    readonly = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
    trees = {}
    for path in [p for p in SYSTEM_DIRS if os.path.isdir(p) and not os.path.islink(p)] + list(extra):
        trees[path] = clone_tree(path, readonly)
    trees["/project"] = clone_tree(project, MOUNT_ATTR_IDMAP if idmap is not None else 0, idmap or 0)
    for name in DEVICES:
        trees["/dev/" + name] = clone_tree("/dev/" + name, MOUNT_ATTR_NOSUID)
    return trees


def build_root(trees: dict[str, int]) -> None:
    """A new root on a tmpfs: the trees in place, symlinks for a merged /usr, a private /tmp,
    the namespace's own /proc; then pivot_root into it and forget the old one."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    root = NEW_ROOT
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")
    for path in SYSTEM_DIRS:
        if os.path.islink(path):  # merged /usr: /bin -> usr/bin
            os.symlink(os.readlink(path), root + path)
    # The private /tmp first: a tree that lives under /tmp (a virtualenv there) is placed in it.
    os.makedirs(root + "/tmp")
    mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m")
    for path, tree in trees.items():
        target = root + path
        if path.startswith("/dev/"):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "a").close()
        else:
            os.makedirs(target, exist_ok=True)
        place(tree, target)
    os.makedirs(root + "/proc")
    mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.makedirs(root + "/.old")
    check(libc.syscall(ctypes.c_long(SYS_PIVOT_ROOT), root.encode(), (root + "/.old").encode()), "pivot_root")
    os.chdir("/")
    check(libc.umount2(b"/.old", MNT_DETACH), "umount the old root")
    os.rmdir("/.old")
    mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)  # the tmpfs itself
    os.chdir("/project")


# ---------------------------------------------------------------- Landlock and seccomp


def landlock(writable: tuple[str, ...], readable: tuple[str, ...]) -> str:
    from sandbox_worker.hardening import _LANDLOCK_FS, landlock_abi

    abi = landlock_abi()
    if abi <= 0:
        return "missing: Landlock not available"
    handled = sum(bits for since, bits in _LANDLOCK_FS.items() if abi >= since)
    attr = ctypes.create_string_buffer(handled.to_bytes(8, "little"), 8)
    ruleset = check(libc.syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), attr, ctypes.c_size_t(8), 0),
                    "landlock_create_ruleset")
    try:
        for path, access in [(p, READ_EXECUTE) for p in readable] + [(p, handled) for p in writable]:
            if not os.path.exists(path):
                continue
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                # struct landlock_path_beneath_attr (packed): allowed_access u64, parent_fd s32
                rule = ctypes.create_string_buffer((access & handled).to_bytes(8, "little")
                                                   + fd.to_bytes(4, "little", signed=True), 12)
                check(libc.syscall(ctypes.c_long(SYS_LANDLOCK_ADD_RULE), ctypes.c_int(ruleset),
                                   LANDLOCK_RULE_PATH_BENEATH, rule, 0), f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        check(libc.syscall(ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return "active"


def deny_filter() -> str:
    numbers = sorted({nr for group in DENIED_GROUPS for name, nr in seccomp.NOTABLE_DENIALS[group].items()
                      if name not in NOT_DENIED} | set(DENIED_EXTRA.values()))
    items: list = [(seccomp._LD_W_ABS, 0, 0, seccomp._OFF_ARCH), (seccomp._JEQ_K, "ok", 0, seccomp.AUDIT_ARCH_X86_64),
                   (seccomp._RET_K, 0, 0, seccomp.SECCOMP_RET_KILL_PROCESS), "ok", (seccomp._LD_W_ABS, 0, 0, seccomp._OFF_NR)]
    for nr in numbers:
        items += [(seccomp._JEQ_K, 0, f"{nr}:no", nr), seccomp.DENY, f"{nr}:no"]
    items.append(seccomp.ALLOW)
    prog = seccomp._assemble(items)
    code = b"".join(prog)
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = seccomp._SockFprog(len(prog), ctypes.cast(buffer, ctypes.c_void_p))
    check(libc.prctl(seccomp.PR_SET_SECCOMP, seccomp.SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")
    return "active"


# ---------------------------------------------------------------- the launcher


NAMESPACES = {"netns": CLONE_NEWNET, "ipcns": CLONE_NEWIPC, "utsns": CLONE_NEWUTS, "pidns": CLONE_NEWPID,
              "mountns": CLONE_NEWNS}


def namespaces(root: bool) -> dict[str, str]:
    """Each namespace its own layer, its own unshare: what the kernel refuses is reported.
    Unprivileged, a user namespace (the caller as uid 1000) comes first, or none can be made."""
    if not root:
        if libc.unshare(CLONE_NEWUSER) != 0:
            reason = f"missing: no user namespace ({os.strerror(ctypes.get_errno())}; unprivileged user namespaces disabled?)"
            return {name: reason for name in NAMESPACES}
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # /proc/self/*_map belong to a process that changed uid to root
        uid, gid = os.geteuid(), os.getegid()
        for name, text in (("uid_map", f"{INSIDE_UID} {uid} 1\n"), ("setgroups", "deny"), ("gid_map", f"{INSIDE_UID} {gid} 1\n")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    report = {}
    for name, flag in NAMESPACES.items():
        ok = libc.unshare(flag) == 0
        report[name] = "active" if ok else f"missing: unshare failed ({os.strerror(ctypes.get_errno())})"
    if report["utsns"] == "active":
        libc.sethostname(HOSTNAME, len(HOSTNAME))
    return report


def drop_privileges(root: bool) -> str:
    for cap in range(64):  # nothing in the bounding set: exec can never grant one back
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # needs CAP_SETPCAP: before the uid changes
    if root:
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)  # every capability goes with uid 0
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    return "active"


def rlimits(config: dict) -> str:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    cpu = int(config["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (int(config["memory_bytes"]),) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(config["file_bytes"]),) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    return "active"


def reap(child: int) -> None:
    """This launcher stays outside the PID namespace: it waits for the command and ends the
    same way (its death kills the command: PR_SET_PDEATHSIG)."""
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        import signal

        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


class Launch:
    """One command's launch, in order: its user, its namespaces, its filesystem view, then the
    layers of the process itself, then exec. Each layer's status goes into ``report`` (sent to
    the broker before exec); a step that fails, or under --isolation strict a layer that is not
    in force, ends the launch with one line to the broker and exit status 127."""

    def __init__(self, config: dict, status_fd: int) -> None:
        self.config = config
        self.status_fd = status_fd
        self.strict = config.get("isolation") == "strict"
        self.report: dict[str, str] = {}

    def fail(self, message: str) -> None:
        try:
            os.write(self.status_fd, ("error " + message + "\n").encode("utf-8", "replace")[:4000])
        finally:
            os._exit(127)

    def require(self, name: str) -> None:
        if self.strict and not is_active(self.report[name]):
            self.fail(f"isolation strict: the command's {name} layer is not in force ({self.report[name]})")

    def layer(self, name: str, apply, *args) -> None:
        try:
            self.report[name] = apply(*args)
        except Exception as exc:  # noqa: BLE001 - a layer that fails is reported, never a traceback
            self.report[name] = f"missing: {exc}"
        self.require(name)

    def user(self, root: bool) -> int | None:
        """The idmap of the project's mount when started as root (the command runs as nobody)."""
        if not root:
            self.report["user"] = f"active: uid {INSIDE_UID} in a user namespace"
            return None
        try:
            idmap = idmap_userns(NOBODY, NOBODY)
        except (Refused, OSError) as exc:
            self.fail(f"the command cannot run as nobody with the project writable ({exc}); it never runs as root")
        self.report["user"] = "active: nobody, the project idmapped"
        return idmap

    def enter_namespaces(self, root: bool) -> None:
        try:
            self.report.update(namespaces(root))
        except OSError as exc:
            self.fail(f"the command's namespaces: {exc}")
        for name in NAMESPACES:
            self.require(name)

    def view(self, idmap: int | None) -> bool:
        """The filesystem view (taken before the PID namespace's fork, built after it); False
        when there is no mount namespace and the command runs in the project as it is."""
        project = self.config["project"]
        trees = None
        if self.report["mountns"] == "active":
            try:
                trees = take_trees(project, self.config.get("extra", []), idmap)
            except (Refused, OSError) as exc:
                self.fail(f"the command's filesystem view could not be made: {exc}")
        if self.report["pidns"] == "active":
            child = os.fork()
            if child:
                os.close(self.status_fd)  # the broker's read of it ends when the command is exec'ed
                reap(child)
            libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
        if trees is None:
            os.chdir(project)
            return False
        try:
            build_root(trees)
        except (Refused, OSError) as exc:
            self.fail(f"the command's filesystem view could not be made: {exc}")
        return True

    def run(self, argv: list[str]) -> None:
        root = os.geteuid() == 0
        idmap = self.user(root)
        self.enter_namespaces(root)
        project = "/project" if self.view(idmap) else self.config["project"]
        self.layer("uid", drop_privileges, root)
        self.layer("landlock", landlock, (project, "/tmp", "/dev"),
                   SYSTEM_DIRS + tuple(self.config.get("extra", ())) + ("/proc",))
        self.layer("seccomp", deny_filter)
        self.layer("rlimits", rlimits, self.config)
        os.write(self.status_fd, ("layers " + json.dumps(self.report) + "\n").encode())
        os.set_inheritable(self.status_fd, False)
        os.closerange(3, self.status_fd)
        os.closerange(self.status_fd + 1, 1 << 16)
        try:
            os.execve(argv[0], argv, self.config["env"])
        except OSError as exc:
            self.fail(f"cannot execute {os.path.basename(argv[0])}: {exc.strerror}")


def main() -> None:
    Launch(json.loads(sys.argv[1]), int(sys.argv[2])).run(sys.argv[3:])


if __name__ == "__main__":
    main()
