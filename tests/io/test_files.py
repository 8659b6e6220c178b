"""Atomic writes with the user's permissions (vidcorr.io.files)."""

import errno
import os
import stat

import pytest

from vidcorr.errors import UserError
from vidcorr.io import files


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_written_files_and_folders_follow_the_umask(tmp_path, umask_022):
    path = str(tmp_path / "a.txt")
    files.atomic_write(path, "x")
    assert _mode(path) == 0o644  # not tempfile's 0600
    with files.staging_folder(str(tmp_path / "out")) as staging:
        assert _mode(staging) == 0o700
        files.publish(staging, str(tmp_path / "out"))
    assert _mode(str(tmp_path / "out")) == 0o755
    os.umask(0o077)
    files.atomic_write(path, "y")
    assert _mode(path) == 0o600 and open(path).read() == "y"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with files.atomic_path(str(path)) as tmp:
            open(tmp, "w").write("half")
            raise RuntimeError("interrupted")
    assert path.read_text() == "old" and os.listdir(str(tmp_path)) == ["a.txt"]


def test_disk_full_is_one_line_naming_the_file(tmp_path):
    path = str(tmp_path / "a.txt")
    with pytest.raises(UserError, match=r"cannot write .*a\.txt: No space left on device"):
        with files.atomic_path(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert os.listdir(str(tmp_path)) == []


def test_check_writable_folder(tmp_path, monkeypatch):
    (tmp_path / "f").write_text("")
    with pytest.raises(UserError, match="exists and is not a folder"):
        files.check_writable_folder(str(tmp_path / "f"))
    deep = tmp_path / "new" / "a" / "b"
    created = files.check_writable_folder(str(deep))
    assert created == [str(tmp_path / "new"), str(tmp_path / "new" / "a"), str(deep)]
    assert files.check_writable_folder(str(deep)) == []
    assert os.listdir(str(deep)) == []  # the probe is gone
    files.remove_empty_folders(created)  # what the caller does when nothing was written
    assert not (tmp_path / "new").exists()
    files.check_writable_folder(str(tmp_path / "new"))

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    monkeypatch.setattr(files.tempfile, "mkstemp", read_only)
    with pytest.raises(UserError, match="--out .* cannot be written: Read-only file system"):
        files.check_writable_folder(str(tmp_path / "new"))


def test_check_replaceable_refuses_what_a_replacement_would_lose(tmp_path):
    from vidcorr.io.files import check_replaceable

    ours = lambda names: names == ["card.json"]  # noqa: E731
    check_replaceable(str(tmp_path / "new"), ours, "an export")  # nothing there: fine
    empty = tmp_path / "empty"
    empty.mkdir()
    check_replaceable(str(empty), ours, "an export")
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "card.json").write_text("{}")
    check_replaceable(str(earlier), ours, "an export")
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.out").write_text("x")
    with pytest.raises(UserError, match=r"is not empty and is not an export \(it holds "
                                        r"events.out\); nothing was written"):
        check_replaceable(str(run), ours, "an export")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="exists and is not a folder"):
        check_replaceable(str(tmp_path / "file"), ours, "an export")
    os.symlink(str(earlier), str(tmp_path / "link"))
    with pytest.raises(UserError, match="is a symbolic link"):
        check_replaceable(str(tmp_path / "link"), ours, "an export")


def _model(folder, text):
    os.makedirs(folder)
    with open(os.path.join(folder, "card.json"), "w") as f:
        f.write(text)


def _read(folder):
    with open(os.path.join(folder, "card.json")) as f:
        return f.read()


@pytest.mark.parametrize("exchange", [True, False])
def test_replace_folder_swaps_in_the_new_and_removes_the_old(tmp_path, monkeypatch, exchange):
    if not exchange:  # the two-rename path of systems without renameat2
        monkeypatch.setattr(files, "_exchange", lambda a, b: False)
    out = str(tmp_path / "model")
    _model(out, "old")
    with files.staging_folder(out) as staging:
        with open(os.path.join(staging, "card.json"), "w") as f:
            f.write("new")
        files.replace_folder(staging, out)
    assert _read(out) == "new" and os.listdir(str(tmp_path)) == ["model"]


def test_a_failed_second_rename_keeps_the_old_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "_exchange", lambda a, b: False)
    out = str(tmp_path / "model")
    _model(out, "old")
    real = os.rename
    calls = []

    def rename(a, b):
        calls.append(b)
        if len(calls) == 2:  # the new folder into place
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(a, b)
    monkeypatch.setattr(files.os, "rename", rename)
    with pytest.raises(UserError, match="cannot write .*model: No space left on device"):
        with files.staging_folder(out) as staging:
            files.replace_folder(staging, out)
    assert _read(out) == "old" and os.listdir(str(tmp_path)) == ["model"]


_KILLED_REPLACE = """
import os, sys
from vidcorr.io import files
files._exchange = lambda a, b: False
out = sys.argv[1]
real = os.rename
calls = []
def rename(a, b):
    calls.append(b)
    if len(calls) == 2:
        os._exit(9)  # killed between the two renames: no clean-up runs
    real(a, b)
files.os.rename = rename
with files.staging_folder(out) as staging:
    open(os.path.join(staging, "card.json"), "w").write("new")
    files.replace_folder(staging, out)
"""


def test_a_replace_killed_between_renames_is_recovered_by_the_next(tmp_path):
    import subprocess
    import sys

    out = str(tmp_path / "model")
    _model(out, "old")
    code = subprocess.call([sys.executable, "-c", _KILLED_REPLACE, out])
    assert code == 9
    left = sorted(os.listdir(str(tmp_path)))
    assert not os.path.exists(out)  # the window the kill hit: the old one is aside
    assert [n.split("-")[0] for n in left] == [".replaced", ".staging"]
    recovered = files.recover_folder(out)  # what the next export does first
    assert len(recovered) == 2 and _read(out) == "old"
    assert os.listdir(str(tmp_path)) == ["model"]
    # A killed replace after the new folder made it in: the old one is removed.
    code = subprocess.call([sys.executable, "-c", _KILLED_REPLACE.replace(
        "len(calls) == 2", "len(calls) == 3").replace(
        "    real(a, b)\nfiles.os", "    real(a, b)\n    if len(calls) == 2: os._exit(9)\n"
                                  "files.os"), out])
    assert code == 9 and _read(out) == "new"
    assert len(os.listdir(str(tmp_path))) == 2  # the old folder, aside
    with files.staging_folder(out):  # the next run cleans it
        pass
    assert os.listdir(str(tmp_path)) == ["model"] and _read(out) == "new"


def test_left_overs_of_live_processes_are_left_alone(tmp_path):
    out = str(tmp_path / "model")
    mine = tmp_path / (".staging-model-%d-abcdefgh" % os.getpid())
    mine.mkdir()
    assert files.recover_folder(out) == [] and mine.exists()


def test_stale_parts_are_removed_and_live_ones_kept(tmp_path):
    import subprocess
    import sys
    import time

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / (".a__b.npz.%d.k2j4h5g6.part" % dead.pid)
    live = tmp_path / (".a__b.png.%d.abcdefgh.part" % os.getpid())
    old = tmp_path / ".a__b.txt.zz9y8x7w.part"  # an earlier vidcorr's: no pid
    fresh = tmp_path / ".c__d.txt.aa9y8x7w.part"
    other = tmp_path / "notes.part"
    for path in (stale, live, old, fresh, other):
        path.write_text("x")
    day = time.time() - files.OLD_PART_SECONDS - 60
    os.utime(str(old), (day, day))
    removed = files.remove_stale_parts(str(tmp_path))
    assert sorted(removed) == sorted([stale.name, old.name])
    assert sorted(os.listdir(str(tmp_path))) == sorted([live.name, fresh.name, other.name])


def test_a_failed_staging_removes_the_parent_folders_it_made(tmp_path):
    out = str(tmp_path / "a" / "b" / "model")
    with pytest.raises(RuntimeError):
        with files.staging_folder(out):
            raise RuntimeError("full disk")
    assert os.listdir(str(tmp_path)) == []


def test_scratch_folders_of_killed_processes_are_removed():
    import subprocess
    import sys
    import tempfile

    parent = tempfile.mkdtemp()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = os.path.join(parent, ".adapt-%d-abcdefgh" % dead.pid)
    live = os.path.join(parent, ".adapt-%d-zyxwvuts" % os.getpid())
    for path in (stale, live):
        os.makedirs(os.path.join(path, "run"))
    fresh = files.scratch_folder(parent, ".adapt-")
    assert sorted(os.listdir(parent)) == sorted([os.path.basename(live),
                                                 os.path.basename(fresh)])
