"""Writing files and folders so that nothing half-written is ever seen, with the user's
permissions, and so that what a killed command left behind is cleaned up by the next.

What "atomic" means for each kind of output:

* **A file** (a match output, a report, a config, a card) is written under a hidden
  temporary name beside its final place, ``.NAME.PID.RANDOM.part``, and renamed
  when complete (:func:`atomic_path`): an error, an interrupt or a concurrent writer
  of the same file leaves the old file or the new one, never a partial one. A
  ``kill -9`` can leave the ``.part`` file; the next command writing into that folder
  removes the ``.part`` files of processes that are gone (:func:`remove_stale_parts`).
* **A folder** (an exported model, a serving export) is written complete in a hidden
  staging folder beside it, ``.staging-NAME-PID-RANDOM``, then swapped in
  (:func:`replace_folder`): on Linux in one ``renameat2(RENAME_EXCHANGE)`` call, so
  ``out`` is always the old folder or the new one; elsewhere the old folder is renamed
  aside (``.replaced-NAME-PID-RANDOM``), the new one renamed in and only then the old
  one removed. A kill between the two renames leaves the old folder aside: the next
  command writing ``out`` puts it back (or removes it where the new one made it in), and
  removes the staging folders of processes that are gone (:func:`recover_folder`).

**One machine.** A left-over is judged by its writer's pid, alive or not *on this
machine*. Two machines writing into one shared folder (NFS) could take each other's
live writer for a dead one and remove its staging folder or ``.part`` files: give each
machine its own ``--out``.

``tempfile`` creates its files ``0600`` and its folders ``0700``; a rename keeps
that mode, so :func:`publish` first gives the file the mode a plain ``open``
would have given it under the process's umask (``0666 & ~umask``, folders
``0777 & ~umask``). Other users can then read outputs and exported models.
"""

import contextlib
import ctypes
import errno
import hashlib
import os
import re
import shutil
import tempfile
import time

from vidcorr.errors import UserError, first_line

__all__ = ["umask", "publish", "atomic_path", "atomic_write", "staging_folder",
           "replace_folder", "recover_folder", "remove_stale_parts", "scratch_folder",
           "check_writable_folder",
           "check_replaceable", "make_folders", "remove_empty_folders"]

STAGING_PREFIX = ".staging-"
ASIDE_PREFIX = ".replaced-"
PART_SUFFIX = ".part"
# a left-over folder's name: prefix, the output's tag, the writer's pid, tempfile's letters
_LEFTOVER = re.compile(r"^(%s|%s)(.+)-(\d+)-[a-z0-9_]+$" % (re.escape(STAGING_PREFIX),
                                                            re.escape(ASIDE_PREFIX)))
_PART = re.compile(r"^\..+\.(\d+)\.[a-z0-9_]+%s$" % re.escape(PART_SUFFIX))
_OLD_PART = re.compile(r"^\..+\.[a-z0-9_]{8}%s$" % re.escape(PART_SUFFIX))
OLD_PART_SECONDS = 24 * 3600  # a .part file of an earlier vidcorr (no pid in its name)


def umask():
    """The process's umask (read without changing it for longer than a call)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _alive(pid):
    """Whether process ``pid`` is running (on this machine)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM): alive
        return True
    return True


def _tag(out):
    """The name of ``out`` as it appears in its staging and aside folders' names."""
    name = os.path.basename(os.path.abspath(out))
    if len(name) <= 80:
        return name
    return name[:60] + hashlib.sha1(name.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def make_folders(folder):
    """``os.makedirs(folder, exist_ok=True)``; returns the folders it created, outermost first
    (for :func:`remove_empty_folders`)."""
    missing, path = [], os.path.abspath(folder)
    while not os.path.isdir(path) and path != os.path.dirname(path):
        missing.append(path)
        path = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    return missing[::-1]


def remove_empty_folders(created):
    """Removes the folders of :func:`make_folders` that are still empty, innermost first."""
    for path in reversed(list(created or ())):
        try:
            os.rmdir(path)
        except OSError:  # not empty (or gone): the folders above it stay too
            return


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
        fd, tmp = tempfile.mkstemp(prefix=".%s.%d." % (name[:200], os.getpid()),
                                   suffix=PART_SUFFIX, dir=folder)
        os.close(fd)
    except OSError as err:
        raise UserError("cannot write %s: %s" % (path, first_line(err)))
    try:
        yield tmp
        publish(tmp, path)
    except OSError as err:
        raise UserError("cannot write %s: %s" % (path, first_line(err)))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def atomic_write(path, text):
    """Writes ``text`` to ``path`` atomically (see :func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        with open(tmp, "w") as f:
            f.write(text)


def remove_stale_parts(folder):
    """Removes the ``.part`` files in ``folder`` that a killed writer left (its process is
    gone; an earlier vidcorr's, without a pid, when a day old). Returns their names."""
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        match = _PART.match(name)
        if match:
            stale = not _alive(int(match.group(1)))
        elif _OLD_PART.match(name):
            try:
                stale = time.time() - os.path.getmtime(os.path.join(folder, name)) > \
                    OLD_PART_SECONDS
            except OSError:
                continue
        else:
            continue
        if stale:
            try:
                os.remove(os.path.join(folder, name))
                removed.append(name)
            except OSError:
                pass
    return removed


def scratch_folder(parent, prefix):
    """A new folder ``PREFIX<pid>-<random>`` in ``parent``, after removing those of the same
    prefix whose processes are gone (what a killed command left)."""
    pattern = re.compile(r"^%s(\d+)-[a-z0-9_]+$" % re.escape(prefix))
    for name in os.listdir(parent):
        match = pattern.match(name)
        if match and not _alive(int(match.group(1))):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
    return tempfile.mkdtemp(prefix="%s%d-" % (prefix, os.getpid()), dir=parent)


def recover_folder(out):
    """Puts back or removes what a killed :func:`replace_folder` of ``out`` left.

    An old folder renamed aside comes back to ``out`` when ``out`` is missing (the
    kill came between the two renames) and is removed otherwise; staging folders of
    processes that are gone are removed. Folders of live processes are left alone.

    Returns:
      The names of the folders put back or removed.
    """
    parent, tag = os.path.dirname(os.path.abspath(out)), _tag(out)
    done = []
    try:
        names = sorted(os.listdir(parent), key=lambda n: not n.startswith(ASIDE_PREFIX))
    except OSError:
        return done
    for name in names:
        match = _LEFTOVER.match(name)
        if not match or match.group(2) != tag or _alive(int(match.group(3))):
            continue
        path = os.path.join(parent, name)
        try:
            if match.group(1) == ASIDE_PREFIX and not os.path.lexists(out):
                os.rename(path, out)
            else:
                shutil.rmtree(path)
            done.append(name)
        except OSError:
            pass
    return done


@contextlib.contextmanager
def staging_folder(out):
    """Yields a new empty folder beside ``out``, after cleaning what a killed earlier
    replace of ``out`` left (:func:`recover_folder`); the folder is removed again unless the
    caller moved it into place (:func:`replace_folder`), and so are parent folders this
    call created, if left empty.

    Raises:
      UserError: if the parent of ``out`` cannot take a folder.
    """
    parent = os.path.dirname(os.path.abspath(out))
    created = []
    try:
        created = make_folders(parent)
        recover_folder(out)
        staging = tempfile.mkdtemp(prefix="%s%s-%d-" % (STAGING_PREFIX, _tag(out), os.getpid()),
                                   dir=parent)
    except OSError as err:
        remove_empty_folders(created)
        raise UserError("cannot write into %s: %s" % (parent, first_line(err)))
    try:
        yield staging
    finally:
        if os.path.isdir(staging):
            shutil.rmtree(staging, ignore_errors=True)
        remove_empty_folders(created)  # those that stayed empty: nothing was written


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a, b):
    """Swaps folders ``a`` and ``b`` in one step (Linux ``renameat2``); False where the
    system or the file system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError, TypeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), b)


def replace_folder(staging, out):
    """Moves the complete folder ``staging`` (of :func:`staging_folder`) to ``out``, replacing
    an existing ``out`` so that it is never lost (see the module docstring).

    Raises:
      UserError: if a rename fails (``out`` is then unchanged), with the reason.
    """
    try:
        publish(staging, staging)  # the folder's mode, before anyone can see it
        if not os.path.lexists(out):
            os.rename(staging, out)
            return
        if _exchange(staging, out):  # staging now holds the old folder
            shutil.rmtree(staging, ignore_errors=True)
            return
        parent = os.path.dirname(os.path.abspath(out))
        aside = tempfile.mkdtemp(prefix="%s%s-%d-" % (ASIDE_PREFIX, _tag(out), os.getpid()),
                                 dir=parent)
        os.rename(out, aside)  # onto the empty folder just made: POSIX allows it
        try:
            os.rename(staging, out)
        except OSError:
            os.rename(aside, out)
            raise
        shutil.rmtree(aside, ignore_errors=True)
    except OSError as err:
        raise UserError("cannot write %s: %s" % (out, first_line(err)))


def check_writable_folder(folder, what="--out"):
    """Checks that ``folder`` exists or can be created, and can take a file.

    The real test: create the folder and a file in it (permissions, read-only
    mounts, a full disk are all found before any work).

    Returns:
      The folders created by this call, outermost first (empty if ``folder`` was
      there): the caller removes them again if nothing is written
      (:func:`remove_empty_folders`).

    Raises:
      UserError: if it is a file or cannot be created or written.
    """
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UserError("%s %s exists and is not a folder" % (what, folder))
    created = []
    try:
        created = make_folders(folder)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=folder)
        try:
            os.write(fd, b"\0" * 4096)  # a full disk refuses data, not always the name
        finally:
            os.close(fd)
            os.remove(probe)
    except OSError as err:
        remove_empty_folders(created)
        raise UserError("%s %s cannot be written: %s" % (what, folder, first_line(err)))
    return created
