"""Writing files that may sit in a directory someone else prepared, without being turned against
the user: nothing is written through a symbolic link, and nothing is ever half-written.

People share run directories (downloaded results, a colleague's runs, a shared cluster disk). A
write that follows a link planted there (``metrics.csv.tmp -> ~/.bashrc``) would overwrite a file
outside the directory with content the directory chose. So every file gymjax writes is opened with
``O_NOFOLLOW``; temporary files are created with ``O_EXCL`` (a leftover one is unlinked first, and
unlinking a link removes the link, not its target); and whole files are replaced by an atomic
rename, which replaces a link itself, never what it points at.

Reading is guarded too (:func:`read_text`, :func:`loads_json`): a FIFO or device planted where a
run's file should be is refused instead of waited on, a file far larger than any gymjax writes is
refused instead of read whole, and JSON nested too deep for Python's parser is bad JSON, not a
``RecursionError``.

A hard link is no symbolic link: ``O_NOFOLLOW`` opens it, and it *is* the file outside. So the few
files written in place (a lock's note, an appended metrics row) are opened with :func:`open_in_place`,
which refuses a file with more than one link; every other file is replaced by a rename, which
unlinks the name and leaves the other links' content alone.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import pathlib
import shlex
import socket
import stat
import sys
import time
from collections.abc import Iterator

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # Linux and macOS have it; elsewhere the rename still protects


# The most gymjax reads of a run directory's file. A JSON record (run.json, a checkpoint's
# metadata) holds a config and the hooks' state: kilobytes. A metrics file holds a row per epoch,
# under a kilobyte each: a million epochs fit. Past these a file is not one gymjax wrote, and read
# whole it would hold twice its size in memory (a 3 GB run.json: 6 GB).
JSON_LIMIT = 64 * 2**20
METRICS_LIMIT = 1024 * 2**20


class UnsafePath(OSError):
    """A path gymjax was to write or read is a symbolic link (or not a regular file)."""


class TooLarge(UnsafePath):
    """A file gymjax was to read is larger than any it writes there."""


def open_fd(path: str | os.PathLike, flags: int, mode: int = 0o644) -> int:
    """``os.open`` that refuses to follow a symbolic link at ``path``, with a message naming it."""
    try:
        return os.open(path, flags | NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafePath(
                errno.ELOOP, f"{path} is a symbolic link; gymjax never writes through one (remove it)", str(path)
            ) from None
        if e.errno == errno.EEXIST and flags & os.O_EXCL:
            raise UnsafePath(errno.EEXIST, f"{path} appeared while gymjax was creating it", str(path)) from None
        raise


def open_in_place(path: str | os.PathLike, flags: int) -> int:
    """:func:`open_fd` for a file written in place (``O_CREAT`` allowed): refuses one that is not a regular
    file, or that has another hard link, whose content a write here would change too."""
    fd = open_fd(path, flags)
    try:
        check_in_place(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_in_place(fd: int, path: str | os.PathLike) -> None:
    """Raises :class:`UnsafePath` unless ``fd`` (opened at ``path``) is a regular file with one link."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(errno.EINVAL, f"{path} is not a regular file", str(path))
    if st.st_nlink > 1:
        raise UnsafePath(
            errno.EMLINK, f"{path} has {st.st_nlink} hard links; gymjax never writes in place to a file that "
            f"is also elsewhere (remove it: the other links keep their content)", str(path),
        )


def read_text(path: str | os.PathLike, limit: int, errors: str = "strict") -> str:
    """``path``'s text (UTF-8), refused by :class:`UnsafePath` when it is a symbolic link or not a
    regular file, by :class:`TooLarge` past ``limit`` bytes. Opened without blocking: a FIFO opened
    for reading waits for a writer, where this refuses it at once."""
    fd = open_fd(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(errno.EINVAL, f"{path} is not a regular file; gymjax wrote none such", str(path))
        data = f.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(errno.EFBIG, f"{path} is larger than {limit:,} bytes, more than gymjax writes there; "
                       "it is not read", str(path))
    return data.decode("utf-8", errors)


def loads_json(text: str) -> object:
    """``json.loads``; a document nested too deep for Python's parser raises ValueError as other bad JSON does."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None


def _temporary(path: pathlib.Path) -> pathlib.Path:
    """``path``'s temporary sibling, created empty and exclusively (never a file someone placed)."""
    tmp = path.with_name(f"{path.stem}.tmp{path.suffix}")  # the suffix kept: ffmpeg picks the format by it
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # a kill's leftover, or a planted link: unlink removes the name only
    os.close(open_fd(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    return tmp


@contextlib.contextmanager
def _naming(path: pathlib.Path | str | os.PathLike) -> Iterator[None]:
    """A failed ``write`` or ``close`` raises an OSError with no file name ("No space left on device");
    this one names the file the user would look for."""
    try:
        yield
    except OSError as e:
        if e.filename is not None:
            raise
        raise OSError(e.errno, e.strerror or str(e), str(path)) from e


def replace_text(path: str | os.PathLike, text: str) -> None:
    """Writes ``path`` whole through an exclusive temporary file and an atomic rename: never half-written,
    never written through a link."""
    path = pathlib.Path(path)
    tmp = _temporary(path)
    try:
        fd = open_fd(tmp, os.O_WRONLY | os.O_TRUNC)
        with _naming(path), os.fdopen(fd, "w", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def append_text(path: str | os.PathLike, text: str) -> None:
    """Appends ``text`` in one ``write`` (a kill tears at most this text), creating ``path`` if needed."""
    fd = open_in_place(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    with _naming(path), os.fdopen(fd, "a", newline="") as f:
        f.write(text)


@contextlib.contextmanager
def replaced(path: str | os.PathLike) -> Iterator[pathlib.Path]:
    """For writers that take a file name (ffmpeg, matplotlib): yields a fresh temporary path to write,
    then renames it onto ``path``. On an error ``path`` is left as it was and the temporary removed."""
    path = pathlib.Path(path)
    tmp = _temporary(path)
    try:
        yield tmp
        if tmp.is_symlink() or not tmp.is_file():
            raise UnsafePath(errno.EINVAL, f"{tmp} was replaced while being written", str(tmp))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def refuse_symlinks(directory: str | os.PathLike) -> None:
    """Raises :class:`UnsafePath` naming the symbolic links under ``directory`` (:func:`symlinks_under`),
    if it holds any: a write through one would land outside it."""
    links = symlinks_under(directory)
    if links:
        shown = ", ".join(str(p.relative_to(directory)) for p in links[:3]) + (" ..." * (len(links) > 3))
        raise UnsafePath(
            errno.ELOOP, f"{directory} holds symbolic links ({shown}); gymjax never makes one and writes through "
            f"none: remove them or pick another directory", str(directory),
        )


def symlinks_under(directory: str | os.PathLike) -> list[pathlib.Path]:
    """Every symbolic link at or under ``directory`` (not followed): what a directory gymjax writes
    must not hold, since gymjax itself never makes one. ``directory`` itself may be a link: the user
    named it."""
    found = []
    for parent, dirs, names in os.walk(directory, followlinks=False):
        for name in dirs + names:
            if os.path.islink(os.path.join(parent, name)):
                found.append(pathlib.Path(parent, name))
    return found


# -- the writer lock ----------------------------------------------------------------------

LOCK_FILE = ".lock"


class LockError(RuntimeError):
    """A directory's writer lock cannot be taken or noted; the message names the directory and why."""


class DirectoryInUse(LockError):
    """Another process holds the directory's writer lock."""



class DirectoryLock:
    """An exclusive ``fcntl.flock`` on ``<directory>/.lock``, released on :meth:`release` or process death.

    The lock file holds the holder's pid, host, start time and command line, so
    a refused second process can say who holds it.
    """

    def __init__(self, directory: str | os.PathLike, what: str = "directory"):
        self.path = pathlib.Path(directory) / LOCK_FILE
        self._fd = -1
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Neither through a symbolic link nor into a hard link's inode: truncating the holder's
            # line would empty the file the link shares it with.
            self._fd = open_in_place(self.path, os.O_RDWR | os.O_CREAT)
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(self._fd, 4096).decode(errors="replace").strip() or "another process"
            os.close(self._fd)
            raise DirectoryInUse(
                f"{self.path.parent} is in use by {holder}; one process at a time writes a {what} "
                f"(wait for it to finish or stop it first)"
            ) from None
        except OSError as e:
            self._close()
            raise LockError(f"cannot lock the {what} {self.path.parent}: {e.strerror or e}") from None
        command = " ".join(shlex.quote(a) for a in sys.argv) or sys.executable
        holder = f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}: {command}"
        try:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, holder.encode() + b"\n", 0)
        except OSError as e:  # a full disk: the lock holds without its note
            self.release()
            raise LockError(f"cannot write {self.path}: {e.strerror}") from None

    def _close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def release(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):  # not if a hard link was made to it since: the note stays
                check_in_place(self._fd, self.path)
                os.ftruncate(self._fd, 0)
            self._close()  # closing drops the flock
