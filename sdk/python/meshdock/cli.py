"""The ``meshdock`` command: mesh files without a daemon, like ``meshio info`` / ``meshio
convert``.

    meshdock info FILE [--format F] [--json]
    meshdock convert IN OUT [--input-format F] [--output-format F] [--ascii] [--float32]

Exit status: 0 done, 1 the file could not be read or written (the message names the file and
the line, byte or array), 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from typing import List, Optional


def _describe(path: str, m, seconds: float) -> dict:
    import numpy as np
    return {
        "file": path,
        "read_seconds": round(seconds, 6),
        "points": {"count": int(len(m.points)), "dim": int(m.points.shape[1]) if m.points.ndim == 2 else 1,
                   "dtype": str(m.points.dtype)},
        "cells": [{"type": b.type, "count": len(b), "ragged": b.ragged,
                   "nodes": None if b.ragged else int(b.data.shape[1])} for b in m.cells],
        "point_data": {k: {"dtype": str(v.dtype), "shape": list(v.shape)}
                       for k, v in m.point_data.items()},
        "cell_data": {k: {"dtype": str(v[0].dtype) if v else None, "blocks": len(v)}
                      for k, v in m.cell_data.items()},
        "field_data": {k: np.asarray(v).tolist() for k, v in m.field_data.items()},
        "regions": [{"name": r.name, "kind": r.kind, "dim": int(r.dim), "tag": int(r.tag),
                     "entries": int(len(r.entries))} for r in m.regions],
        "notes": list(m.notes),
    }


def _short(v) -> str:
    """A field data value as info prints it: the values when few (a physical name's [tag, dim]),
    else the shape and dtype (gmsh:periodic_nodes holds a pair per periodic node)."""
    import numpy as np

    a = np.asarray(v)
    return str(v) if a.size <= 8 else f"<{a.dtype} array {'x'.join(map(str, a.shape))}>"


def _print_info(d: dict) -> None:
    p = d["points"]
    print(f"{d['file']}  (read in {d['read_seconds'] * 1e3:.1f} ms)")
    print(f"  points: {p['count']} x {p['dim']} {p['dtype']}")
    total = sum(b["count"] for b in d["cells"])
    print(f"  cells: {total} in {len(d['cells'])} blocks")
    width = max([16] + [len(b["type"]) + 2 for b in d["cells"]])  # VTK_LAGRANGE_... too
    for b in d["cells"]:
        # Types whose name does not say the node count: polygons, VTK's arbitrary order cells.
        says = b["nodes"] is not None and (b["type"] == "polygon" or b["type"].startswith("VTK_"))
        tail = ("  (ragged)" if b["ragged"] else "") + (f"  ({b['nodes']} nodes)" if says else "")
        print(f"    {b['type']:<{width}}{b['count']:>12}{tail}")
    for title, key in (("point data", "point_data"), ("cell data", "cell_data")):
        if d[key]:
            print(f"  {title}: " + ", ".join(d[key]))
    if d["field_data"]:
        print("  field data: " + ", ".join(f"{k}={_short(v)}" for k, v in d["field_data"].items()))
    if d["regions"]:
        print("  regions:")
        for r in d["regions"]:
            print(f"    {r['name']:<20} {r['kind']:<6} dim {r['dim']:>2} tag {r['tag']:>4} "
                  f"{r['entries']:>10} entries")
    for n in d["notes"]:
        print(f"  note: {n}")


def main(argv: Optional[List[str]] = None) -> int:
    from meshdock import __version__

    # The module docstring's first and third paragraphs, without its reST literals.
    paras = [p.replace("``", "").replace("\n", " ") for p in __doc__.split("\n\n")]
    ap = argparse.ArgumentParser(prog="meshdock", description=paras[0], epilog=paras[2])
    ap.add_argument("--version", action="version", version=f"meshdock {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("info", help="what a mesh file holds")
    i.add_argument("file", help="the mesh file to read")
    i.add_argument("--format", help="the file's format (default: from its extension; a wrong "
                   "one lists the formats)")
    i.add_argument("--json", action="store_true", help="one JSON object on stdout")
    c = sub.add_parser("convert", help="read IN, write OUT (formats from the extensions)")
    c.add_argument("input", help="the mesh file to read")
    c.add_argument("output", help="the file to write (an existing one is replaced; never the "
                   "input)")
    c.add_argument("--input-format", "-i", metavar="F",
                   help="IN's format (default: from its extension)")
    c.add_argument("--output-format", "-o", metavar="F",
                   help="OUT's format (default: from its extension; a wrong one lists the "
                   "writers)")
    c.add_argument("--ascii", action="store_true",
                   help="ascii output where the format has both (vtu, msh, ...)")
    c.add_argument("--float32", action="store_true", help="store points and float data as float32")
    a = ap.parse_args(argv)

    import meshdock

    if a.cmd == "convert":
        try:
            same = os.path.samefile(a.input, a.output)
        except OSError:  # no output yet (or no input: read says so)
            same = False
        if same:
            # The writer replaces the file it is reading from: the input would be lost on any
            # lossy or failing conversion (the daemon's Export refuses the same).
            print(f"meshdock convert: {a.output} is the input file {a.input}; write to another "
                  "path", file=sys.stderr)
            return 2

    try:
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            m = meshdock.read(a.file if a.cmd == "info" else a.input,
                              format=a.format if a.cmd == "info" else a.input_format)
            dt = time.perf_counter() - t0
        if a.cmd == "info":
            d = _describe(a.file, m, dt)
            if a.json:
                json.dump(d, sys.stdout, indent=2)
                print()
            else:
                _print_info(d)
            return 0
        if a.float32:
            import numpy as np
            m.points = m.points.astype(np.float32)
            m.point_data = {k: v.astype(np.float32) if v.dtype.kind == "f" else v
                            for k, v in m.point_data.items()}
            m.cell_data = {k: [p.astype(np.float32) if p.dtype.kind == "f" else p for p in v]
                           for k, v in m.cell_data.items()}
        kw = {"encoding": "ascii"} if a.ascii else {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            notes = meshdock.write(a.output, m, format=a.output_format, **kw)
        for n in list(m.notes) + list(notes or []):
            print(f"meshdock convert: note: {n}", file=sys.stderr)
        del caught
        print(f"{a.input} -> {a.output}: {len(m.points)} points, "
              f"{sum(len(b) for b in m.cells)} cells in {len(m.cells)} blocks")
        return 0
    except BrokenPipeError:
        # `meshdock info FILE | head -1`: the reader went away, as it may. Quietly, with the
        # status a process killed by SIGPIPE has (as git and coreutils end), and no second
        # error when Python flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (meshdock.MeshError, OSError) as e:
        # An OSError from read (missing / unreadable file) carries the reader's message, which
        # names the file, as its strerror.
        msg = str(getattr(e, "strerror", None) or e)
        # The library's hint names the keyword and meshdockctl's option; say this command's.
        hint = "(format=, --format)"
        if a.cmd == "convert" and msg.endswith(hint):
            writing = isinstance(e, meshdock.WriteError) or msg.startswith(f"{a.output}:")
            msg = msg[:-len(hint)] + ("(--output-format)" if writing else "(--input-format)")
        elif msg.endswith(hint):
            msg = msg[:-len(hint)] + "(--format)"
        print(f"meshdock {a.cmd}: {msg}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
