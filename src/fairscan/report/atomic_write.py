"""A set of files replaced all together, or not at all.

A report set (``name.json``, ``name.md``, ``name.junit.xml``, ``name.html``) must never mix two
runs: on a full disk the JSON could be new and the HTML old. So every file is first written in
full to a temporary file in its folder (and flushed to disk), the previous files are kept as hard
links beside them, and only then are the temporary files renamed over the targets, one after
the other, with SIGINT and SIGTERM held back. If writing any file fails (or Ctrl-C arrives
while writing), the temporary files are removed and the previous set is left as it was; if a
rename fails, the renamed files are restored from the kept links. Ctrl-C during the renames is
handled once they are done: the new set is complete and the run still exits 130/143.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

_HELD_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _write_temporary(path: Path, text: str) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600 files; reports get the usual permissions (umask applies)
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _keep(path: Path) -> Path | None:
    """A hard link to the current ``path`` (to restore it), or None when there is none."""
    if not path.exists():
        return None
    backup = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.old")
    try:
        os.link(path, backup)
    except OSError:
        return None  # no hard links here: the rename step cannot be undone, but stays atomic
    return backup


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM that arrive during the block are handled once it is done (by the
    handlers in place before it). Python handlers, not a signal mask: a process-directed
    signal may land on any thread, and Python runs its handler in the main thread anyway.
    Outside the main thread (where handlers cannot be set) this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: object) -> None:
        held.append(signum)

    previous = {signum: signal.signal(signum, hold) for signum in _HELD_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        if held:
            signal.raise_signal(held[0])  # now handled as it would have been


def write_all(texts: Mapping[Path, str]) -> list[Path]:
    """Write every ``path: text`` so that either all paths hold the new texts or all keep what
    they held (see the module doc); the paths written."""
    temporaries: dict[Path, Path] = {}
    backups: dict[Path, Path] = {}
    try:
        for path, text in texts.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            temporaries[path] = _write_temporary(path, text)
        for path in texts:
            backup = _keep(path)
            if backup is not None:
                backups[path] = backup
        with _signals_held():
            _replace_all(temporaries, backups)
    finally:
        for leftover in [*temporaries.values(), *backups.values()]:
            with contextlib.suppress(OSError):
                leftover.unlink(missing_ok=True)
    return list(texts)


def _replace_all(temporaries: dict[Path, Path], backups: dict[Path, Path]) -> None:
    done: list[Path] = []
    try:
        for path, tmp in temporaries.items():
            os.replace(tmp, path)
            done.append(path)
    except BaseException:
        for path in done:  # put the previous set back
            with contextlib.suppress(OSError):
                if path in backups:
                    os.replace(backups[path], path)
                else:
                    path.unlink()
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """One file replaced whole (a spec ``audit init`` or ``--save-spec`` writes): a reader
    never sees it half-written; :func:`write_all` of that one file."""
    write_all({path: text})
