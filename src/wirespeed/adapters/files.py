"""Reading a file a person named (a cluster file, an output to import, a record of a run) without being stopped by
what the name turned out to be: only regular files are read (a FIFO would block forever, a device or /dev/zero never
ends), never more than a stated size, and text that is not UTF-8 is one line naming the byte and line.

Every refusal is `Unreadable`, a ValueError whose message is one line WITHOUT the file's name, so that the caller
puts the name (or a shorter one) in front: `wirespeed: cluster.toml: not a regular file (a FIFO)`.

Paths read from something someone else made (a snapshot, a run directory, an import) are read with `root=`: the
path is resolved first and a symbolic link that leaves the root is refused, naming where it points, never followed
(a link inside the root, as a snapshot mirrors sysfs, is fine). JSON is read through `load_json`, which refuses
nesting past wirespeed.core.records.nesting.MAX_DEPTH and a top level of the wrong kind before anything uses it.

Every file wirespeed writes goes through `replacing`/`write_atomic` (a new temporary beside the target, opened with
O_CREAT|O_EXCL|O_NOFOLLOW, written, fsynced, then renamed over the target: a link planted at either name is never
written through) or, for what grows line by line, `open_append` (O_NOFOLLOW, whole lines or nothing). A failure
(ENOSPC, EIO, EROFS, a planted link) is `Unwritable`: one line naming the file and what was kept.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any, Protocol

from wirespeed.core.errors import WirespeedError
from wirespeed.core.records import nesting


class Unreadable(ValueError):
    """A file that was not read; the message says why in a few words, without the file's name."""


KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def size_text(size: int, exact: bool = True) -> str:
    """`17.0 MiB (17825792 bytes)`, as a refusal for size shows a file's size; `16 MiB` for a limit (not exact)."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            shown = f"{size // scale}" if size % scale == 0 else f"{size / scale:.1f}"
            return f"{shown} {unit} ({size} bytes)" if exact else f"{shown} {unit}"
    return f"{size} bytes"


def _within(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def inside(root: Path, path: Path) -> Path:
    """`path` (under `root`) resolved, every symbolic link on the way followed; `Unreadable` when it lands outside
    `root`, saying where the link points (the link is never read through)."""
    real_root = os.path.realpath(root)
    resolved = os.path.realpath(path)
    if _within(real_root, resolved):
        return Path(resolved)
    try:
        points = f"a symbolic link to {os.readlink(path)}" if os.path.islink(path) else f"resolves to {resolved}"
    except OSError:
        points = f"resolves to {resolved}"
    raise Unreadable(f"{points}, outside {root}: not followed")


def read_bytes(path: Path, limit: int, *, too_large: str = "", root: Path | None = None) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; `Unreadable` otherwise.

    The file is opened without blocking (O_NONBLOCK: a FIFO with no writer would wait forever in open) and its kind
    is taken from the open descriptor, so a file swapped for a FIFO between a check and the read is still refused.
    `too_large` is added to the size refusal (what to do instead). With `root`, a path that resolves outside it is
    refused (`inside`) and the resolved path is opened with O_NOFOLLOW."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    if root is not None:
        path, flags = inside(root, path), flags | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise Unreadable("no such file") from None
    except PermissionError:
        raise Unreadable("permission denied") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and root is not None:
            raise Unreadable("a symbolic link (swapped in while read): not followed") from None
        raise Unreadable(f"cannot open it: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in KINDS if test(mode)), "not a plain file")
            raise Unreadable(f"not a regular file ({kind})")
        size = os.fstat(fd).st_size
        if size > limit:
            raise Unreadable(f"{size_text(size)}, larger than the {size_text(limit, False)} limit{too_large}")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:  # grew while read
            raise Unreadable(f"larger than the {size_text(limit, False)} limit{too_large}")
        return data
    except OSError as exc:
        raise Unreadable(f"cannot read it: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def utf8(data: bytes) -> str:
    """`data` as UTF-8 text (a BOM dropped); `Unreadable` naming the first bad byte's offset and line otherwise."""
    try:
        return data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data.count(b"\n", 0, offset) + 1
        raise Unreadable(f"not UTF-8 text: byte 0x{data[offset]:02x} at offset {offset} (line {line})") from None


def read_text(path: Path, limit: int, *, too_large: str = "", root: Path | None = None) -> str:
    """A regular UTF-8 file's text, at most `limit` bytes: `read_bytes`, then `utf8`."""
    return utf8(read_bytes(path, limit, too_large=too_large, root=root))


def load_json(path: Path, limit: int, *, expect: type | None = dict, root: Path | None = None) -> Any:
    """A JSON file's value: `read_text`, then refused (`Unreadable`) when it is not JSON, nests deeper than
    nesting.MAX_DEPTH, or its top level is not an `expect` (a dict by default; None: anything)."""
    text = read_text(path, limit, root=root)
    try:
        return nesting.loads_json(text, expect)
    except ValueError as exc:
        raise Unreadable(str(exc)) from None


# --------------------------------------------------------------------------------------------------- writing
class Unwritable(WirespeedError):
    """A file that was not written (or not in full): one line naming it, why, and what was kept."""


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _link_refusal(path: Path) -> Unwritable:
    try:
        points = os.readlink(path)
    except OSError:
        points = "?"
    return Unwritable(f"{path}: a symbolic link (to {points}) is in its place: not written through it",
                      hint="remove the link, or write somewhere else")  # fmt: skip


def ensure_dir(path: Path, root: Path | None = None) -> Path:
    """`path` made a directory (with its parents); with `root`, refused (`Unwritable`) where it resolves outside it
    (a planted link to somewhere else)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise Unwritable(f"{path}: cannot create the directory: {_why(exc)} (nothing written in it)") from None
    if root is not None:
        try:
            inside(root, path)
        except Unreadable as exc:
            raise Unwritable(f"{path}: {exc}; nothing written there") from None
    return path


TEMPORARY_TOKEN_BYTES = 4  # `.NAME.<8 hex digits>.tmp`


def temporaries_of(path: Path) -> list[Path]:
    """The temporaries this writer makes for `path` that are still there: a writer killed between writing one
    and renaming it leaves it behind."""
    digits = 2 * TEMPORARY_TOKEN_BYTES
    found = []
    for candidate in path.parent.glob(f".{path.name}.*.tmp"):
        middle = candidate.name[len(path.name) + 2 : -len(".tmp")]
        if len(middle) == digits and all(c in "0123456789abcdef" for c in middle):
            found.append(candidate)
    return found


def _temporary(path: Path, mode: int) -> tuple[Path, int]:
    """A new, empty file beside `path`, opened for writing: never an existing file or link (O_EXCL|O_NOFOLLOW)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(8):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(TEMPORARY_TOKEN_BYTES)}.tmp")
        try:
            return tmp, os.open(tmp, flags, mode)
        except FileExistsError:
            continue  # someone's file (or a planted link) has this name: another name, never theirs
    raise FileExistsError(errno.EEXIST, "every temporary name tried beside it is taken")


@contextmanager
def replacing(
    path: Path, *, root: Path | None = None, mode: int = 0o666, chmod: int | None = None
) -> Iterator[IO[bytes]]:
    """A file to write `path`'s new content to; when the block ends it is fsynced and renamed over `path` (the
    directory fsynced too), so a reader sees the old file or the new one, never half of one. A symbolic link at
    `path` is refused (the rename would replace the link itself, not write through it). Any OSError, in the block
    or after it, removes the temporary and is `Unwritable`, saying the old file is kept. `mode` is created under
    the umask; `chmod` sets the mode exactly, whatever the umask."""
    kept = f"the earlier {path.name} is kept as it was" if os.path.lexists(path) else f"no {path.name} was written"
    if os.path.islink(path):
        raise _link_refusal(path)
    if root is not None:
        ensure_dir(path.parent, root)
    tmp: Path | None = None
    try:
        tmp, fd = _temporary(path, mode)
        if chmod is not None:
            os.fchmod(fd, chmod)
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        tmp = None
        with suppress(OSError):
            directory = os.open(path.parent, os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
    except OSError as exc:
        raise Unwritable(f"{path}: cannot write it: {_why(exc)} ({kept})") from None
    finally:
        if tmp is not None:
            with suppress(OSError):
                os.unlink(tmp)


def write_atomic(
    path: Path, data: bytes | str, *, root: Path | None = None, mode: int = 0o666, chmod: int | None = None
) -> Path:
    """`path` replaced by `data` (text as UTF-8) in one step: `replacing`."""
    with replacing(path, root=root, mode=mode, chmod=chmod) as handle:
        _write_all(handle.fileno(), data.encode("utf-8") if isinstance(data, str) else data)
    return path


def _write_all(fd: int, data: bytes) -> None:
    """Every byte of `data` to `fd` (a write may take fewer than asked); OSError (ENOSPC, EIO) goes on up."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class TextSink(Protocol):
    """Where lines go as they come: an `Appender` (or, in tests, a StringIO)."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class Appender:
    """A file that grows as lines come (raw tool output, samples, `watch --record`): each `write` goes to the file
    whole or not at all (a write cut short by a full disk is taken back), so a reader never finds a cut line."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd
        self.lines = 0  # whole lines written through this appender

    def write(self, text: str) -> int:
        data = text.encode("utf-8")
        if self._fd is None:
            raise Unwritable(f"{self.path}: written to after it was closed")
        start = os.fstat(self._fd).st_size
        try:
            _write_all(self._fd, data)
        except OSError as exc:
            with suppress(OSError):
                os.ftruncate(self._fd, start)
            raise Unwritable(f"{self.path}: cannot write it: {_why(exc)} (kept: what was written before, "
                             f"{self.lines} whole line(s) from this run; nothing cut)") from None  # fmt: skip
        self.lines += data.count(b"\n")
        return len(text)

    def writelines(self, lines: Iterator[str] | list[str]) -> None:
        self.write("".join(lines))

    def flush(self) -> None:
        """Nothing to do: every write went to the file at once."""

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self) -> Appender:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def open_append(path: Path, *, root: Path | None = None) -> Appender:
    """`path` opened to add to its end (created when missing): a symbolic link there is refused (O_NOFOLLOW), and
    so is anything but a regular file; with `root`, a directory on the way that leaves it is refused too."""
    if root is not None:
        ensure_dir(path.parent, root)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link_refusal(path) from None
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads (O_NONBLOCK): said as what it is
            raise Unwritable(f"{path}: not a regular file (a FIFO): nothing written") from None
        raise Unwritable(f"{path}: cannot write it: {_why(exc)} (nothing written)") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = next((name for test, name in KINDS if test(mode)), "not a plain file")
        raise Unwritable(f"{path}: not a regular file ({kind}): nothing written")
    os.set_blocking(fd, True)
    return Appender(path, fd)
