#!/usr/bin/python3
"""Writes partitioned MSH files (gmsh 4.8 -part) and geometry-only ones, and records in
REFERENCE.partitions.json what their unpartitioned twins hold, read by meshio 5.0 and from gmsh's
own MSH 2.2 partitioned export.

    /usr/bin/python3 tests/data/tools/make_msh_partitions.py   # from the repository root

Into tests/data/gmsh:

  partbox.v41.msh            gmsh -3 partbox.geo: the unpartitioned twin (meshio reads it)
  partbox.p3.v22.msh         -part 3 -format msh22: each element's tags are physical, elementary,
                             numPartitions, partition... (the reference for every partitioned one)
  partbox.p3.v22b.msh        the same in binary (one header per run of a type and tag count)
  partbox.p3-ghosts.v22.msh / .v22b.msh  -part_ghosts (Mesh.PartitionCreateGhostCells): an
                             element's tags list, after its partition, the other partitions it
                             touches, negated (4 to 6 tags); no ghost elements of their own
  partbox.p3-split1.v22.msh  -part_split: partition 1's file (its elements only)
  partbox.p3.v41.msh         -part 3 -format msh41 (Mesh.PartitionCreateTopology, the default:
                             gmsh adds elements on the interfaces between partitions)
  partbox.p3.v41b.msh        the same in binary, with Mesh.PartitionCreateGhostCells
                             ($GhostElements)
  partbox.p3-notopo.v41.msh  Mesh.PartitionCreateTopology 0: no interface entities
  partbox.p3.v40.msh         -format msh40 (points get a 6-value box)
  partbox.p3-split1.v41b.msh -part_split with ghost cells, binary: partition 1's file (ghost
                             entities hold copies of other partitions' elements)
  partplate.p2.v41.msh       partplate.geo in 2 partitions: 4 elements and 2 on the interface
  partplate.p2.v30.msh / .v30b.msh  the same in MSH 3.0 ascii / binary (-format msh3):
                             partitions after each element's nodes, gmsh's partition pieces as
                             plain $Entities (no parents), interface elements with no partition
  points.v41.msh / .v22.msh  gmsh -0 of three points, one physical group: no mesh

Into tests/data/fuzz/msh_reader (seeds of fuzz_msh_reader, replayed by ctest -R fuzz):

  partplate.p2-ghosts.v22.msh / .v22b.msh  partplate.geo in 2 partitions with -part_ghosts, MSH
                             2.2 ascii / binary: partition tags of 4 and 5 values

The reference of a partitioned file is a canonical form of its cells (type, physical,
elementary, partition, the sorted coordinates of the nodes), taken from the 2.2 export (the
same partitioning: gmsh with one thread is deterministic) and compared by SHA-1 in
tests/python/test_read_reference.py; points with gmsh:dim_tags and the regions' sizes come from
meshio reading the unpartitioned twin.
"""
import hashlib
import json
import pathlib
import shutil
import subprocess
import tempfile

import meshio
import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
# tests/data/gmsh, not meshes/: the files there go through every writer round trip, and
# an empty mesh (points.*) or a name with a space is not what those tests are about.
MESHES = HERE.parents[0] / "gmsh"
FUZZ_SEEDS = HERE.parents[0] / "fuzz" / "msh_reader"
MESHIO_TYPES = {15: "vertex", 1: "line", 2: "triangle", 3: "quad", 4: "tetra", 5: "hexahedron",
                6: "wedge", 7: "pyramid"}


def gmsh(geo, out, *args):
    subprocess.run(["gmsh", "-nt", "1", "-v", "1", "-3" if "points" not in geo else "-0",
                    str(HERE / geo), *args, "-o", str(out)], check=True, capture_output=True)


def cell_key(ctype, physical, elementary, partition, coords):
    rows = sorted(tuple(f"{x:.9f}" for x in p) for p in coords)
    return f"{ctype}|{physical}|{elementary}|{partition}|" + ";".join(",".join(r) for r in rows)


def digest(keys):
    return hashlib.sha1("\n".join(sorted(keys)).encode()).hexdigest()


def cells_of_v22(path):
    """Canonical cells of an ascii MSH 2.2 file, with each element's (first) partition."""
    lines = path.read_text().splitlines()
    nodes = {}
    at = lines.index("$Nodes")
    for row in lines[at + 2:at + 2 + int(lines[at + 1])]:
        t, *xyz = row.split()
        nodes[int(t)] = [float(v) for v in xyz]
    at = lines.index("$Elements")
    keys = []
    for row in lines[at + 2:at + 2 + int(lines[at + 1])]:
        v = [int(x) for x in row.split()]
        ntags = v[2]
        tags = v[3:3 + ntags]
        partition = tags[3] if ntags > 3 else 0
        keys.append((MESHIO_TYPES[v[1]], tags[0], tags[1], partition,
                     [nodes[n] for n in v[3 + ntags:]]))
    return keys


def main():
    refs = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        twin = MESHES / "partbox.v41.msh"
        gmsh("partbox.geo", twin, "-format", "msh41")
        v22 = MESHES / "partbox.p3.v22.msh"
        gmsh("partbox.geo", v22, "-part", "3", "-format", "msh22")
        gmsh("partbox.geo", MESHES / "partbox.p3.v22b.msh", "-part", "3", "-format", "msh22",
             "-bin")
        for suffix, binary in (("v22", []), ("v22b", ["-bin"])):
            gmsh("partbox.geo", MESHES / f"partbox.p3-ghosts.{suffix}.msh", "-part", "3",
                 "-part_ghosts", "-format", "msh22", *binary)
        gmsh("partbox.geo", tmp / "split22.msh", "-part", "3", "-part_split", "-format", "msh22")
        shutil.copy(tmp / "split22_1.msh", MESHES / "partbox.p3-split1.v22.msh")
        gmsh("partbox.geo", MESHES / "partbox.p3.v41.msh", "-part", "3", "-format", "msh41")
        gmsh("partbox.geo", MESHES / "partbox.p3.v41b.msh", "-part", "3", "-format", "msh41",
             "-bin", "-setnumber", "Mesh.PartitionCreateGhostCells", "1")
        gmsh("partbox.geo", MESHES / "partbox.p3-notopo.v41.msh", "-part", "3", "-format", "msh41",
             "-setnumber", "Mesh.PartitionCreateTopology", "0")
        gmsh("partbox.geo", MESHES / "partbox.p3.v40.msh", "-part", "3", "-format", "msh40")
        gmsh("partbox.geo", tmp / "split.msh", "-part", "3", "-part_split", "-format", "msh41",
             "-bin", "-setnumber", "Mesh.PartitionCreateGhostCells", "1")
        shutil.copy(tmp / "split_1.msh", MESHES / "partbox.p3-split1.v41b.msh")
        subprocess.run(["gmsh", "-nt", "1", "-v", "1", "-2", str(HERE / "partplate.geo"), "-part",
                        "2", "-format", "msh41", "-o", str(MESHES / "partplate.p2.v41.msh")],
                       check=True, capture_output=True)
        for suffix, binary in (("v30", []), ("v30b", ["-bin"])):
            subprocess.run(["gmsh", "-nt", "1", "-v", "1", "-2", str(HERE / "partplate.geo"), "-part",
                            "2", "-format", "msh3", *binary, "-o",
                            str(MESHES / f"partplate.p2.{suffix}.msh")],
                           check=True, capture_output=True)
        for suffix, binary in (("v22", []), ("v22b", ["-bin"])):
            subprocess.run(["gmsh", "-nt", "1", "-v", "1", "-2", str(HERE / "partplate.geo"), "-part",
                            "2", "-part_ghosts", "-format", "msh22", *binary, "-o",
                            str(FUZZ_SEEDS / f"partplate.p2-ghosts.{suffix}.msh")],
                           check=True, capture_output=True)
        gmsh("points.geo", MESHES / "points.v41.msh", "-format", "msh41")
        gmsh("points.geo", MESHES / "points.v22.msh", "-format", "msh22")

    m = meshio.read(twin)
    cells = cells_of_v22(v22)
    assert sum(len(c.data) for c in m.cells) == len(cells), "the 2.2 export is not the twin"
    dim_of = {"vertex": 0, "line": 1, "triangle": 2, "tetra": 3}
    regions = {}
    for name, (tag, dim) in m.field_data.items():
        if dim == 0:  # a point region: the nodes of its vertex elements
            pts = {tuple(c[4][0]) for c in cells if c[0] == "vertex" and c[1] == tag}
            regions[name] = len(pts)
        else:
            regions[name] = sum(1 for c in cells if dim_of[c[0]] == dim and c[1] == tag)
    points = [",".join(f"{x:.9f}" for x in p) + f"|{d}|{t}"
              for p, (d, t) in zip(m.points, m.point_data["gmsh:dim_tags"])]
    by_partition = {}
    for c in cells:
        by_partition.setdefault(str(c[3]), []).append(cell_key(*c))
    refs.append({
        "file": "partbox.p3.*",
        "twin": twin.name,
        "num_cells": len(cells),
        "cells_sha1": digest(cell_key(*c) for c in cells),
        "cells_sha1_by_partition": {k: digest(v) for k, v in by_partition.items()},
        "cells_by_partition": {k: len(v) for k, v in by_partition.items()},
        "physical_tags": sorted({int(c[1]) for c in cells}),
        "points_sha1": digest(points),
        "regions": regions,
        "field_data": {k: np.asarray(v).tolist() for k, v in m.field_data.items()},
        "reference_from": "cells: gmsh's MSH 2.2 partitioned export (partbox.p3.v22.msh); "
                          "points, dim_tags, field_data: meshio 5.0 on partbox.v41.msh",
    })
    (MESHES / "REFERENCE.partitions.json").write_text(json.dumps(refs, indent=1) + "\n")


if __name__ == "__main__":
    main()
