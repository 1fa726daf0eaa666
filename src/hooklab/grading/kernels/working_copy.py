"""A kernel's working copy: the regular files of the folder it was asked to work in, copied at its
confinement (or, for a spare, when it is taken) and moved into its working folder at its first request."""

from __future__ import annotations

import errno
import os
import stat

from hooklab.grading.kernels.sandbox import FILES, STAGED, WORK


def copy_regular_files(source: str, target: str, owner: int | None = None) -> list[str]:
    """Copy the regular files under ``source`` into the folder ``target`` (subfolders made anew, given to
    ``owner`` if not None), never following a link; returns the paths (relative to ``source``) left out:
    links, other kinds of file, files that cannot be read."""
    left_out: list[str] = []
    directory = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

    def copy(source_fd: int, target_fd: int, prefix: str) -> None:
        with os.scandir(source_fd) as entries:
            for entry in sorted(entries, key=lambda entry: entry.name):
                name = prefix + entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        os.mkdir(entry.name, 0o755, dir_fd=target_fd)
                        inner = os.open(entry.name, directory, dir_fd=source_fd)
                        try:
                            made = os.open(entry.name, directory, dir_fd=target_fd)
                            try:
                                if owner is not None:
                                    os.fchown(made, owner, owner)
                                copy(inner, made, name + "/")
                            finally:
                                os.close(made)
                        finally:
                            os.close(inner)
                    elif entry.is_file(follow_symlinks=False):
                        _copy_file(entry.name, source_fd, target_fd, owner)
                    else:
                        left_out.append(name)
                except OSError:
                    left_out.append(name)

    source_fd, target_fd = os.open(source, directory), os.open(target, directory)
    try:
        copy(source_fd, target_fd, "")
    finally:
        os.close(source_fd)
        os.close(target_fd)
    return left_out


def _copy_file(name: str, source_fd: int, target_fd: int, owner: int | None) -> None:
    reading = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=source_fd)
    try:
        if not stat.S_ISREG(os.fstat(reading).st_mode):  # replaced since it was listed
            raise OSError(errno.EINVAL, "not a regular file")
        writing = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                          dir_fd=target_fd)
        try:
            if owner is not None:
                os.fchown(writing, owner, owner)
            while chunk := os.read(reading, 1 << 20):
                os.write(writing, chunk)
        except OSError:  # no half of a file (out of space, over the file size limit)
            os.unlink(name, dir_fd=target_fd)
            raise
        finally:
            os.close(writing)
    finally:
        os.close(reading)


awaiting_files = ""  # in a sandboxed kernel, until its first request: "staged" (STAGED holds them), "files" (a spare)


def fill_awaited_working_copy() -> list[str]:
    """In a sandboxed kernel, at its first request (sent by the grader before the notebook's first cell, once
    its integrity snapshot is taken), or before a kernel that is not hooklab's is executed: move the copy
    made when it was confined into its working folder, or, for a spare (given its folder when it was taken),
    copy that folder's read-only view (:data:`FILES`); returns what was left out. Nothing later."""
    global awaiting_files
    source, awaiting_files = awaiting_files, ""
    if source == "staged":
        for name in os.listdir(STAGED):  # one tmpfs: a rename each
            os.rename(f"{STAGED}/{name}", f"{WORK}/{name}")
    elif source == "files":
        return copy_regular_files(FILES, WORK)
    return []
