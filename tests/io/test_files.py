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
    assert files.check_writable_folder(str(tmp_path / "new")) is True
    assert files.check_writable_folder(str(tmp_path / "new")) is False
    assert os.listdir(str(tmp_path / "new")) == []  # the probe is gone

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
