"""Report sets are written all together or not at all (issue 24): a write that fails part-way
(a full disk, injected through a file-size rlimit; a rename that fails) leaves the previous set
as it was, with no temporary files; Ctrl-C during the renames completes the set first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fairscan.report import atomic_write
from fairscan.report.atomic_write import write_all

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX only")

NAMES = ("r.json", "r.md", "r.junit.xml", "r.html")


def _old_set(folder: Path) -> dict[Path, str]:
    old = {folder / name: f"old {name}\n" for name in NAMES}
    write_all(old)
    return old


def _contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def test_a_new_set_replaces_the_old_one(tmp_path: Path) -> None:
    _old_set(tmp_path)
    write_all({tmp_path / name: f"new {name}\n" for name in NAMES})
    assert _contents(tmp_path) == {name: f"new {name}\n" for name in NAMES}


def test_a_full_disk_leaves_the_previous_set_intact(tmp_path: Path) -> None:
    """The file-size rlimit makes the big HTML write fail with EFBIG, as a full disk would."""
    old = _old_set(tmp_path)
    script = textwrap.dedent(
        f"""
        import resource, signal, sys
        from pathlib import Path
        from fairscan.report.atomic_write import write_all
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        folder = Path({str(tmp_path)!r})
        texts = {{folder / n: "new\\n" for n in {NAMES!r}}}
        texts[folder / "r.html"] = "x" * 100_000
        try:
            write_all(texts)
        except OSError as exc:
            print("OSError", exc.errno)
            sys.exit(3)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=os.environ.copy()
    )
    assert done.returncode == 3, done.stderr
    assert "OSError 27" in done.stdout  # EFBIG
    assert _contents(tmp_path) == {p.name: text for p, text in old.items()}


def test_a_failing_rename_restores_the_files_already_renamed(tmp_path: Path) -> None:
    old = _old_set(tmp_path)
    real_replace = os.replace
    calls = []

    def failing_replace(src: object, dst: object) -> None:
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(atomic_write.os, "replace", failing_replace)
        with pytest.raises(OSError, match="No space"):
            write_all({tmp_path / name: f"new {name}\n" for name in NAMES})
    assert _contents(tmp_path) == {p.name: text for p, text in old.items()}


def test_ctrl_c_during_the_renames_completes_the_set_then_interrupts(tmp_path: Path) -> None:
    _old_set(tmp_path)
    real_replace = os.replace

    def interrupted_replace(src: object, dst: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # held back until the set is complete
        real_replace(src, dst)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(atomic_write.os, "replace", interrupted_replace)
        with pytest.raises(KeyboardInterrupt):
            write_all({tmp_path / name: f"new {name}\n" for name in NAMES})
    assert _contents(tmp_path) == {name: f"new {name}\n" for name in NAMES}


def test_ctrl_c_while_writing_leaves_the_old_set(tmp_path: Path) -> None:
    old = _old_set(tmp_path)
    real_write = atomic_write._write_temporary
    count = []

    def interrupted_write(path: Path, text: str) -> Path:
        count.append(path)
        if len(count) == 2:
            raise KeyboardInterrupt
        return real_write(path, text)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(atomic_write, "_write_temporary", interrupted_write)
        with pytest.raises(KeyboardInterrupt):
            write_all({tmp_path / name: f"new {name}\n" for name in NAMES})
    assert _contents(tmp_path) == {p.name: text for p, text in old.items()}
