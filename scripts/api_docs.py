"""Builds vidcorr's API reference (HTML) from its docstrings with pdoc, and checks them.

    pip install -e ".[docs]" && python scripts/api_docs.py [--out docs/api]

Open ``docs/api/index.html``. Docstrings are read as Google style (``Args:``, ``Returns:``,
``Raises:``). The build fails (exit 1, a line per problem) if pdoc warns (a module that
cannot be imported, a bad cross-reference, a docstring it cannot parse) or if a public
module, class, function or method has no docstring; CI runs it.
"""

import argparse
import importlib
import os
import pkgutil
import sys
import warnings

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)


def _modules(package):
    """Every module of the package (not the model folders, which hold no code)."""
    return [package.__name__] + [m.name for m in pkgutil.walk_packages(
        package.__path__, package.__name__ + ".") if ".models" not in m.name]


def undocumented(names):
    """The public modules, classes, functions and methods among ``names``' modules that
    have no docstring of their own."""
    import pdoc.doc

    missing = []
    for name in names:
        module = pdoc.doc.Module(importlib.import_module(name))
        missing += [] if module.docstring else [name]
        for member in module.members.values():
            if member.name.startswith("_") or member.modulename != name or not isinstance(
                    member, (pdoc.doc.Function, pdoc.doc.Class)):
                continue
            missing += [] if member.docstring else [member.fullname]
            if isinstance(member, pdoc.doc.Class):
                missing += [m.fullname for m in member.own_members if isinstance(
                    m, pdoc.doc.Function) and not m.name.startswith("_") and not m.docstring]
    return missing


def build(out):
    """Writes the reference to ``out``; returns the problems found (empty: all good)."""
    try:
        import pdoc
        import pdoc.render
    except ImportError:
        return ["pdoc is not installed: pip install -e .[docs]"]
    import vidcorr

    names = _modules(vidcorr)
    pdoc.render.configure(docformat="google", footer_text="vidcorr %s" % vidcorr.__version__)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # the top-level modules only: pdoc adds each sub-package's modules itself
        pdoc.pdoc(*[n for n in names if n.count(".") <= 1], output_directory=_path(out))
    problems = ["pdoc: %s" % str(w.message).splitlines()[0] for w in caught
                if "pdoc" in w.filename and "may refer to either" not in str(w.message)]
    return problems + ["no docstring: %s" % n for n in undocumented(names)]


def _path(out):
    import pathlib
    return pathlib.Path(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "api"),
                        help="output folder (default: docs/api, not tracked)")
    args = parser.parse_args(argv)
    problems = build(args.out)
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        print("API reference: %s" % os.path.join(os.path.abspath(args.out), "index.html"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
