"""A kernel confining itself before it runs: raw syscalls through libc, its namespaces and mounts, its
privileges dropped, its rlimits, and its memory through cgroup v2 where the grader was given one."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import platform
import resource
import socket
import stat
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

from hooklab.grading.kernels import working_copy
from hooklab.grading.kernels.sandbox import FILES, PRIVATE, STAGED, WORK, Sandbox, SandboxError
from hooklab.grading.kernels.working_copy import copy_regular_files

# ---- the kernel's own primitives, through libc ----

_libc = ctypes.CDLL(None, use_errno=True)
_SYSCALLS = {"x86_64": {"pivot_root": 155, "capset": 126}, "aarch64": {"pivot_root": 41, "capset": 91}}
_SYS_MOUNT_SETATTR = 442  # the same on every architecture
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x20000, 0x8000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV, AT_RECURSIVE, AT_FDCWD, MNT_DETACH = 1, 2, 4, 0x8000, -100, 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 4, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL, CAPABILITY_VERSION_3 = 4, 0x20080522
SIOCSIFFLAGS, IFF_UP = 0x8914, 1


def _check(result: int, what: str) -> None:
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _syscall(name: str, *args: object) -> None:
    _check(_libc.syscall(_SYSCALLS[platform.machine()][name], *args), name)


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def encode(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    _check(_libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)), f"mount {target}")


def _set_mount_attributes(path: str, attributes: int, flags: int = AT_RECURSIVE) -> None:
    attr = (ctypes.c_uint64 * 4)(attributes, 0, 0, 0)  # struct mount_attr: set, clear, propagation, userns
    _check(_libc.syscall(_SYS_MOUNT_SETATTR, AT_FDCWD, os.fsencode(path), flags, attr, ctypes.sizeof(attr)),
           f"mount_setattr {path}")


def prctl(option: int, value: int) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0), "prctl")


def write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


# ---- confinement (in the kernel, before it runs) ----


SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
DEVICES = ("null", "zero", "full", "random", "urandom")
_STAGE = "/tmp"  # where the kernel's root is assembled, in its own mount namespace, before it pivots into it


@dataclass(frozen=True)
class _Mount:
    path: str
    kind: str  # "ro", "rw", "dev": binds of a path outside; "private": a bind of a folder of the private tmpfs;
    # "tmpfs", "proc"; "link" (a symlink)
    option: str = ""  # tmpfs: its mount options; link: its target; a bind: its source, if not the same path


def _python_paths() -> list[str]:
    """The Python environment: its prefixes, its import path (less the first entry, the folder of the
    script that started this process, as ``python -m`` puts it there) and hooklab itself."""
    import hooklab

    paths = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *sys.path[1:], *hooklab.__path__}
    paths |= {os.path.realpath(path) for path in paths}
    return [path for path in paths if os.path.isabs(path) and os.path.exists(path)]


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _layout(sandbox: Sandbox, cwd: str, sockets: str) -> list[_Mount]:
    """Everything the kernel's root holds, parents before children; refuses a layout that would show a
    hidden path, or make the Python environment writable."""
    readonly: list[str] = []
    for path in sorted({*(p for p in SYSTEM if os.path.isdir(p) and not os.path.islink(p)), *_python_paths()}):
        if not any(_within(path, kept) for kept in readonly):
            readonly.append(path)
    hidden = [os.path.realpath(path) for path in sandbox.hidden]
    temporary = os.path.realpath(tempfile.gettempdir())  # where kernels' socket folders are made
    if _within(temporary, os.path.realpath(cwd)):
        raise SandboxError(f"a kernel working in {cwd} would see other kernels' sockets (in {temporary})")
    for folder in [*readonly, cwd, sockets]:
        for path in hidden + (readonly if folder in (cwd, sockets) else []):
            if _within(os.path.realpath(path), os.path.realpath(folder)):
                raise SandboxError(f"a kernel working in {cwd} would see {path} (through {folder})")
    tmpfs = f"mode=1777,size={sandbox.disk}" if sandbox.disk else "mode=1777"
    mounts = [
        *(_Mount(path, "link", os.readlink(path)) for path in SYSTEM if os.path.islink(path)),
        *(_Mount(path, "ro") for path in readonly),
        _Mount("/proc", "proc"),
        _Mount("/dev", "tmpfs", "mode=0755,size=64k"),
        *(_Mount(f"/dev/{name}", "dev") for name in DEVICES),
        *(_Mount(f"/dev/{name}", "link", f"/proc/self/fd/{fd}")
          for fd, name in enumerate(("stdin", "stdout", "stderr"))),
        _Mount("/dev/fd", "link", "/proc/self/fd"),
        _Mount("/dev/shm", "private", f"{PRIVATE}/shm"),
        _Mount(FILES, "ro", cwd),
        _Mount(cwd, "private", WORK),
        _Mount(sockets, "rw"),
    ]
    # the private tmpfs first (the binds of its folders need them), then parents before children
    return [_Mount("/tmp", "tmpfs", tmpfs), *sorted(mounts, key=lambda mount: mount.path)]


def _enter_view(mounts: list[_Mount], uid: int | None) -> None:
    """Pivot into a new root, a read-only tmpfs that holds ``mounts`` and nothing else of the machine; the
    folders of the private tmpfs belong to ``uid`` (None: to this user namespace's root)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    binds = [m for m in mounts if m.kind in ("ro", "rw", "dev")]
    sources = {m.path: os.open(m.option or m.path, os.O_PATH | os.O_CLOEXEC) for m in binds}
    _mount("tmpfs", _STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    for mount in mounts:
        target = _STAGE + mount.path
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if mount.kind == "link":
            os.symlink(mount.option, target)
        elif mount.kind in ("tmpfs", "proc"):
            os.makedirs(target, exist_ok=True)
            extra = MS_NOEXEC if mount.kind == "proc" else 0
            _mount(mount.kind, target, mount.kind, MS_NOSUID | MS_NODEV | extra, mount.option or None)
            if mount.path == "/tmp":
                for folder in (PRIVATE, f"{PRIVATE}/shm", WORK, STAGED, FILES):
                    os.mkdir(_STAGE + folder, 0o700)
                    if uid is not None:
                        os.chown(_STAGE + folder, uid, uid)
        elif mount.kind == "private":
            os.makedirs(target, exist_ok=True)
            _mount(_STAGE + mount.option, target, None, MS_BIND)
            _set_mount_attributes(target, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, flags=0)
        else:
            source = sources[mount.path]
            if stat.S_ISDIR(os.fstat(source).st_mode):
                os.makedirs(target, exist_ok=True)
            elif not os.path.exists(target):
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
            _mount(f"/proc/self/fd/{source}", target, None, MS_BIND | MS_REC)
            readonly = MOUNT_ATTR_RDONLY if mount.kind == "ro" else 0
            nodev = 0 if mount.kind == "dev" else MOUNT_ATTR_NODEV
            _set_mount_attributes(target, MOUNT_ATTR_NOSUID | nodev | readonly)
    for source in sources.values():
        os.close(source)
    os.chdir(_STAGE)
    _syscall("pivot_root", b".", b".")
    _check(_libc.umount2(b".", MNT_DETACH), "umount the old root")
    os.chdir("/")
    _set_mount_attributes("/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, flags=0)


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", IFF_UP))


def _drop_privileges(uid: int | None, last_capability: int) -> None:
    """Become ``uid`` (None: stay the user namespace's root), with no capabilities and no way to gain any."""
    for capability in range(last_capability + 1):
        prctl(PR_CAPBSET_DROP, capability)
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    _syscall("capset", (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0), (ctypes.c_uint32 * 6)())
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    prctl(PR_SET_DUMPABLE, 1)  # its /proc/self stays its own after the change of uid


def _limit(sandbox: Sandbox, address_space: bool) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    limits = {resource.RLIMIT_FSIZE: sandbox.file_size, resource.RLIMIT_NOFILE: sandbox.open_files}
    if address_space:
        limits[resource.RLIMIT_AS] = sandbox.memory
    if sandbox.isolate:
        limits[resource.RLIMIT_NPROC] = sandbox.processes
    for which, value in limits.items():
        if value:
            hard = resource.getrlimit(which)[1]
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))


@dataclass
class KernelStart:
    """What the processes of one kernel's start share; the fds are write ends, held by whoever writes."""

    sandbox: Sandbox
    cwd: str
    sockets: str
    target: Callable[[], object]
    report: int  # "ok", or why the kernel could not be confined
    files_later: bool = False  # its folder is filled after it starts (a spare): fill_awaited_working_copy
    uid: int | None = None  # the kernel's, when the grader is root
    cgroup: str | None = None
    output: int = -1  # the kernel's stdout and stderr, which the supervisor copies into its own stderr
    status: int = -1  # the kernel's wait status, from its init
    # the kernel's end of a socket pair: "bound" when its sockets are, "sealed" back (sockets_bound)
    handshake: int = -1
    channel: int = -1  # the kernel's end of its observation channel (client.ObservationChannel), kept open for it


def confine(start: KernelStart) -> None:
    sandbox, cwd, sockets = start.sandbox, start.cwd, start.sockets
    if start.cgroup:
        write(f"{start.cgroup}/cgroup.procs", "0")
    if sandbox.isolate:
        mounts = _layout(sandbox, cwd, sockets)
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            last_capability = int(handle.read())
        if start.uid is not None:  # the socket folder becomes the kernel's (the folder it works in is copied)
            for path in [sockets, *(os.path.join(sockets, name) for name in os.listdir(sockets))]:
                os.chown(path, start.uid, start.uid, follow_symlinks=False)
        unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC)
        _loopback_up()
        _enter_view(mounts, start.uid)
        working_copy.awaiting_files = "files" if start.files_later else "staged"
        if not start.files_later:  # as root still, which can read the folder it was asked to work in
            copy_regular_files(FILES, STAGED, start.uid)
        _drop_privileges(start.uid, last_capability)
    _limit(sandbox, address_space=not start.cgroup)
    os.chdir(cwd)


# ---- memory through cgroup v2, where the grader was given one ----


def cgroup_problem(sandbox: Sandbox) -> str | None:
    """Why ``sandbox.cgroup`` cannot hold kernels' cgroups, or None (also None when none is configured)."""
    if not sandbox.cgroup:
        return None
    try:
        with open(os.path.join(sandbox.cgroup, "cgroup.subtree_control")) as handle:
            enabled = handle.read().split()
    except OSError as error:
        return f"cgroup {sandbox.cgroup}: {error.strerror}"
    return None if "memory" in enabled else (f"cgroup {sandbox.cgroup}: the memory controller is not enabled for its "
                                             "children")


def cgroup_for_kernel(sandbox: Sandbox) -> str | None:
    if not sandbox.cgroup:
        return None
    path = os.path.join(sandbox.cgroup, f"kernel-{os.getpid()}")
    os.mkdir(path)
    if sandbox.memory:
        write(f"{path}/memory.max", str(sandbox.memory))
        if os.path.exists(f"{path}/memory.swap.max"):
            write(f"{path}/memory.swap.max", "0")
    return path


def remove_cgroup(path: str) -> None:
    for _ in range(100):  # its processes are gone, but the cgroup may take a moment to empty
        try:
            os.rmdir(path)
            return
        except OSError as error:
            if error.errno != errno.EBUSY:
                raise
            time.sleep(0.01)
