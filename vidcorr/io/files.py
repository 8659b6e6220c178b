"""Writing files so that nothing half-written is ever seen, with the user's permissions.

Every file vidcorr writes for a user (match outputs, reports, configs, exported
models) is written under a unique temporary name beside its final place and
renamed when complete: an error, an interrupt or a concurrent writer of the
same file leaves either the old file or the new one, never a partial one.

``tempfile`` creates its files ``0600`` and its folders ``0700``; a rename keeps
that mode, so :func:`publish` first gives the file the mode a plain ``open``
would have given it under the process's umask (``0666 & ~umask``, folders
``0777 & ~umask``). Other users can then read outputs and exported models.
"""

import contextlib
import os
import shutil
import tempfile

from vidcorr.errors import UserError

__all__ = ["umask", "publish", "atomic_path", "atomic_write", "staging_folder",
           "check_writable_folder", "check_replaceable", "os_reason"]


def umask():
    """The process's umask (read without changing it for longer than a call)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def os_reason(err):
    """The short reason of an ``OSError`` ("No space left on device", ...)."""
    return getattr(err, "strerror", None) or str(err) or type(err).__name__


def check_replaceable(out, ours, what):
    """Refuses an output folder ``out`` whose replacement would lose something: a symbolic
    link, a file, or a non-empty folder that ``ours(names)`` does not recognise as an
    earlier output of the same kind (its file names, sorted).

    Args:
      out: the folder a command will replace.
      ours: a callable of the folder's sorted file names, True for an earlier output.
      what: what such an output is called in the message ("an earlier export").

    Raises:
      UserError: naming ``--out`` and what is there.
    """
    if os.path.islink(out):
        raise UserError("--out %s is a symbolic link; give the folder it points to (%s) or a "
                        "new folder" % (out, os.path.realpath(out)))
    if os.path.exists(out) and not os.path.isdir(out):
        raise UserError("--out %s exists and is not a folder" % out)
    names = sorted(os.listdir(out)) if os.path.isdir(out) else []
    if names and not ours(names):
        raise UserError("--out %s is not empty and is not %s (it holds %s); nothing was "
                        "written: choose a new folder" % (out, what, ", ".join(names[:3])))


def publish(tmp, path):
    """Gives ``tmp`` the default mode under the umask and renames it to ``path``.

    Args:
      tmp: a complete file or folder beside ``path`` (same file system).
      path: its final name; an existing file there is replaced atomically.
    """
    full = 0o777 if os.path.isdir(tmp) else 0o666
    os.chmod(tmp, full & ~umask())
    os.replace(tmp, path)


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside ``path``; on success renames it into place.

    Concurrent writers each get their own temporary file and the last rename
    wins; on any error the temporary file is removed and ``path`` is untouched.

    Raises:
      UserError: if the folder cannot take the file (full disk, read-only, no
        permission), naming the file.
    """
    folder, name = os.path.split(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + name + ".", suffix=".part", dir=folder)
        os.close(fd)
    except OSError as err:
        raise UserError("cannot write %s: %s" % (path, os_reason(err)))
    try:
        yield tmp
        publish(tmp, path)
    except OSError as err:
        raise UserError("cannot write %s: %s" % (path, os_reason(err)))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def atomic_write(path, text):
    """Writes ``text`` to ``path`` atomically (see :func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        with open(tmp, "w") as f:
            f.write(text)


@contextlib.contextmanager
def staging_folder(out):
    """Yields a new empty folder beside ``out``; removed again unless the caller renamed it.

    Raises:
      UserError: if the parent of ``out`` cannot take a folder.
    """
    parent = os.path.dirname(os.path.abspath(out))
    try:
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".staging-", dir=parent)
    except OSError as err:
        raise UserError("cannot write into %s: %s" % (parent, os_reason(err)))
    try:
        yield staging
    finally:
        if os.path.isdir(staging):
            shutil.rmtree(staging, ignore_errors=True)


def check_writable_folder(folder, what="--out"):
    """Checks that ``folder`` exists or can be created, and can take a file.

    The real test: create the folder and a file in it (permissions, read-only
    mounts, a full disk are all found before any work).

    Returns:
      True if the folder was created by this call (the caller may remove it
      again if nothing is written).

    Raises:
      UserError: if it is a file or cannot be created or written.
    """
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UserError("%s %s exists and is not a folder" % (what, folder))
    created = not os.path.isdir(folder)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=folder)
        try:
            os.write(fd, b"\0" * 4096)  # a full disk refuses data, not always the name
        finally:
            os.close(fd)
            os.remove(probe)
    except OSError as err:
        raise UserError("%s %s cannot be written: %s" % (what, folder, os_reason(err)))
    return created
