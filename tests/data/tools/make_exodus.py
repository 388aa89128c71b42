#!/usr/bin/python3
"""Writes the Exodus II test files into tests/data/exodus/:

    /usr/bin/python3 tests/data/tools/make_exodus.py

cube.vtk-writer.exo    VTK 9's vtkExodusIIWriter (a real third-party writer; classic netCDF,
                       checked by its magic) writing gmsh's cube.geo tetrahedra (read by VTK from
                       a .vtu of gmsh's tetrahedra), with a point data array; when VTK is not installed
                       the file already here is kept.
mixed.meshio.exo       meshio 5.0's exodus writer: netCDF-4 / HDF5 (its default), kept to test
                       meshdock's refusal and its message.
mixed.cdf1.exo         the same mesh and data written here as meshio's writer lays them out, in
mixed.cdf2.exo         CDF-1 (NETCDF3_CLASSIC), CDF-2 (NETCDF3_64BIT_OFFSET) and CDF-5
mixed.cdf5.exo         (NETCDF3_64BIT_DATA): a tetra, hexahedron, wedge, pyramid, triangle, quad
                       and line block, point data "temp" and "velocity_X/Y/Z" (stacked into one
                       (n, 3) array by meshio's reader), two named node sets.
steps.cdf2.exo         three time steps of node and element variables, block names, a side set, node and
                       element number maps, info and QA records, a global variable.
truth-table.cdf2.exo   the same with element variable 2 left out of block 2 by the truth table
                       (meshio 5.0 fails on it: its concatenated values do not fit the blocks).
tetra10.cdf5.exo       a tetra10 block ("TETRA10") and a TETRA block of 10 nodes, the old
                       `coord` (num_dim, num_nodes) layout, int64 connectivity (CDF-5).

Fuzz seeds (tests/data/fuzz/exodus_reader/): seed-streaming.exo (mixed.cdf1.exo with numrecs
0xFFFFFFFF, the streaming form: records counted from the file's size), seed-byte-record.exo (a
lone byte record variable, unpadded records, beside an Exodus mesh), seed-truncated.exo (steps
cut inside its data).
"""
import os
import subprocess
import tempfile

import meshio
import netCDF4
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "exodus")

EXO_TYPE = {"vertex": "SPHERE", "line": "BEAM", "triangle": "TRIANGLE", "quad": "QUAD",
            "tetra": "TETRA", "hexahedron": "HEX", "wedge": "WEDGE", "pyramid": "PYRAMID",
            "tetra10": "TETRA10", "hexahedron20": "HEX20"}


def chars(nc, name, strings, dim_n, dim_len="len_string"):
    v = nc.createVariable(name, "S1", (dim_n, dim_len))
    v.set_auto_mask(False)
    width = len(nc.dimensions[dim_len])
    a = np.zeros((len(strings), width), dtype="S1")
    for i, s in enumerate(strings):
        for k, ch in enumerate(s.encode()):
            a[i, k] = bytes([ch])
    v[:] = a


def write_classic(path, fmt, points, blocks, point_vars=None, elem_vars=None, node_sets=None,
                  side_sets=None, steps=1, block_names=None, maps=False, records=False,
                  old_coord=False, int_type="i4"):
    """Exodus II as meshio's writer lays it out, in a netCDF classic format.
    point_vars: {name: (steps, n)}; elem_vars: {name: {block index: (steps, cells)}}."""
    point_vars = point_vars or {}
    elem_vars = elem_vars or {}
    node_sets = node_sets or {}
    side_sets = side_sets or {}
    with netCDF4.Dataset(path, "w", format=fmt) as nc:
        nc.title = "meshdock test"
        nc.version = np.float32(5.1)
        nc.api_version = np.float32(5.1)
        nc.floating_point_word_size = 8
        n, dim = points.shape
        nc.createDimension("len_string", 33)
        nc.createDimension("len_line", 81)
        nc.createDimension("four", 4)
        nc.createDimension("time_step", None)
        nc.createDimension("num_dim", dim)
        nc.createDimension("num_nodes", n)
        nc.createDimension("num_elem", sum(len(c) for _, c in blocks))
        nc.createDimension("num_el_blk", len(blocks))
        t = nc.createVariable("time_whole", "f8", ("time_step",))
        t[:] = np.arange(steps, dtype=float) * 0.5
        chars(nc, "coor_names", ["X", "Y", "Z"][:dim], "num_dim")
        if old_coord:
            nc.createVariable("coord", "f8", ("num_dim", "num_nodes"))[:] = points.T
        else:
            for k, name in enumerate(["coordx", "coordy", "coordz"][:dim]):
                nc.createVariable(name, "f8", ("num_nodes",))[:] = points[:, k]
        nc.createVariable("eb_prop1", "i4", ("num_el_blk",))[:] = np.arange(len(blocks)) + 10
        if block_names:
            chars(nc, "eb_names", block_names, "num_el_blk")
        for k, (ctype, conn) in enumerate(blocks):
            conn = np.asarray(conn)
            nc.createDimension(f"num_el_in_blk{k + 1}", conn.shape[0])
            nc.createDimension(f"num_nod_per_el{k + 1}", conn.shape[1])
            v = nc.createVariable(f"connect{k + 1}", int_type,
                                  (f"num_el_in_blk{k + 1}", f"num_nod_per_el{k + 1}"))
            v.elem_type = EXO_TYPE.get(ctype, ctype)
            v[:] = conn + 1
        if point_vars:
            nc.createDimension("num_nod_var", len(point_vars))
            chars(nc, "name_nod_var", list(point_vars), "num_nod_var")
            for k, vals in enumerate(point_vars.values()):
                v = nc.createVariable(f"vals_nod_var{k + 1}", "f8", ("time_step", "num_nodes"))
                v[:] = vals
        if elem_vars:
            nc.createDimension("num_elem_var", len(elem_vars))
            chars(nc, "name_elem_var", list(elem_vars), "num_elem_var")
            tab = np.zeros((len(blocks), len(elem_vars)), dtype="i4")
            for i, per_block in enumerate(elem_vars.values()):
                for b, vals in per_block.items():
                    tab[b, i] = 1
                    v = nc.createVariable(f"vals_elem_var{i + 1}eb{b + 1}", "f8",
                                          ("time_step", f"num_el_in_blk{b + 1}"))
                    v[:] = vals
            nc.createVariable("elem_var_tab", "i4", ("num_el_blk", "num_elem_var"))[:] = tab
        if node_sets:
            nc.createDimension("num_node_sets", len(node_sets))
            nc.createVariable("ns_prop1", "i4", ("num_node_sets",))[:] = \
                np.arange(len(node_sets)) + 100
            chars(nc, "ns_names", list(node_sets), "num_node_sets")
            for k, ids in enumerate(node_sets.values()):
                nc.createDimension(f"num_nod_ns{k + 1}", len(ids))
                nc.createVariable(f"node_ns{k + 1}", "i4", (f"num_nod_ns{k + 1}",))[:] = \
                    np.asarray(ids) + 1
        if side_sets:
            nc.createDimension("num_side_sets", len(side_sets))
            nc.createVariable("ss_prop1", "i4", ("num_side_sets",))[:] = \
                np.arange(len(side_sets)) + 200
            chars(nc, "ss_names", list(side_sets), "num_side_sets")
            for k, (els, sides) in enumerate(side_sets.values()):
                nc.createDimension(f"num_side_ss{k + 1}", len(els))
                nc.createVariable(f"elem_ss{k + 1}", "i4", (f"num_side_ss{k + 1}",))[:] = \
                    np.asarray(els) + 1
                nc.createVariable(f"side_ss{k + 1}", "i4", (f"num_side_ss{k + 1}",))[:] = sides
        if maps:
            nc.createVariable("node_num_map", "i4", ("num_nodes",))[:] = np.arange(n) + 1001
            nc.createVariable("elem_num_map", "i4", ("num_elem",))[:] = \
                np.arange(len(nc.dimensions["num_elem"])) + 501
        if records:
            nc.createDimension("num_info", 2)
            chars(nc, "info_records", ["made by make_exodus.py", "for meshdock's tests"],
                  "num_info", "len_line")
            nc.createDimension("num_qa_rec", 1)
            qa = nc.createVariable("qa_records", "S1", ("num_qa_rec", "four", "len_string"))
            qa.set_auto_mask(False)
            a = np.zeros((1, 4, 33), dtype="S1")
            for k, s in enumerate(["make_exodus", "1.0", "2026-12-06", "20:00:00"]):
                for i, ch in enumerate(s.encode()):
                    a[0, k, i] = bytes([ch])
            qa[:] = a
            nc.createDimension("num_glo_var", 1)
            chars(nc, "name_glo_var", ["energy"], "num_glo_var")
            g = nc.createVariable("vals_glo_var", "f8", ("time_step", "num_glo_var"))
            g[:] = np.arange(steps, dtype=float).reshape(steps, 1)


def mixed_mesh():
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                    [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1],
                    [0.5, 0.5, 2], [2, 0, 0], [2, 1, 0], [2, 0.5, 1]], dtype=float)
    blocks = [("tetra", [[0, 1, 3, 4], [1, 2, 3, 6]]),
              ("hexahedron", [[0, 1, 2, 3, 4, 5, 6, 7]]),
              ("wedge", [[1, 9, 2, 5, 11, 6]]),
              ("pyramid", [[4, 5, 6, 7, 8]]),
              ("triangle", [[0, 1, 2], [0, 2, 3]]),
              ("quad", [[1, 9, 10, 2]]),
              ("line", [[0, 1], [1, 9], [9, 10]])]
    return pts, blocks


def mixed():
    pts, blocks = mixed_mesh()
    n = len(pts)
    temp = np.linspace(0, 1, n)
    vel = np.arange(3 * n, dtype=float).reshape(n, 3) / 7
    sets = {"bottom": np.array([0, 1, 2, 3]), "apex": np.array([8])}
    m = meshio.Mesh(pts, [(t, np.array(c)) for t, c in blocks],
                    point_data={"temp": temp}, point_sets=sets)
    meshio.write(os.path.join(OUT, "mixed.meshio.exo"), m, file_format="exodus")
    pv = {"temp": temp[None, :], "velocity_X": vel[None, :, 0], "velocity_Y": vel[None, :, 1],
          "velocity_Z": vel[None, :, 2]}
    for tag, fmt in [("cdf1", "NETCDF3_CLASSIC"), ("cdf2", "NETCDF3_64BIT_OFFSET"),
                     ("cdf5", "NETCDF3_64BIT_DATA")]:
        write_classic(os.path.join(OUT, f"mixed.{tag}.exo"), fmt, pts, blocks, point_vars=pv,
                      node_sets=sets)


def steps(name, gap):
    pts, blocks = mixed_mesh()
    blocks = blocks[:3]
    n = len(pts)
    pv = {"u": np.array([np.arange(n) * (s + 1.0) for s in range(3)])}
    ev = {"stress": {0: np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
                     1: np.array([[7.0], [8.0], [9.0]]), 2: np.array([[10.0], [11.0], [12.0]])},
          "damage": {0: np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]),
                     1: np.array([[0.0], [0.0], [0.0]]), 2: np.array([[0.7], [0.8], [0.9]])}}
    if gap:
        del ev["damage"][1]
    write_classic(os.path.join(OUT, name), "NETCDF3_64BIT_OFFSET", pts, blocks,
                  point_vars=pv, elem_vars=ev, node_sets={"top": [4, 5, 6, 7]},
                  side_sets={"floor": ([0, 2, 3], [4, 5, 1])}, steps=3,
                  block_names=["tets", "", "prism"], maps=True, records=True)


def tetra10():
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1],
                    [0.5, 0, 0], [0.5, 0.5, 0], [0, 0.5, 0],
                    [0, 0, 0.5], [0.5, 0, 0.5], [0, 0.5, 0.5]], dtype=float)
    conn = np.arange(10)[None, :]
    write_classic(os.path.join(OUT, "tetra10.cdf5.exo"), "NETCDF3_64BIT_DATA", pts,
                  [("tetra10", conn), ("TETRA", conn[:, ::-1].copy())], old_coord=True,
                  int_type="i8")


def vtk_writer():
    try:
        from vtkmodules.vtkIOExodus import vtkExodusIIWriter
        from vtkmodules.vtkIOXML import vtkXMLUnstructuredGridReader
        from vtkmodules.vtkCommonCore import vtkDoubleArray
    except ImportError:
        print("VTK is not installed: cube.vtk-writer.exo kept as it is")
        return
    with tempfile.TemporaryDirectory() as tmp:
        msh, vtu = os.path.join(tmp, "cube.msh"), os.path.join(tmp, "cube.vtu")
        subprocess.run(["gmsh", "-3", os.path.join(HERE, "cube.geo"), "-o", msh, "-format",
                        "msh41", "-v", "0"], check=True)
        # gmsh's mesh holds every element (points, lines, triangles, tetrahedra): the tetrahedra
        # only go to VTK (as a .vtu), whose writer wants one cell dimension per block.
        m = meshio.read(msh)
        tets = m.get_cells_type("tetra")
        used = np.unique(tets)
        remap = np.full(len(m.points), -1)
        remap[used] = np.arange(len(used))
        meshio.write(vtu, meshio.Mesh(m.points[used], [("tetra", remap[tets])]),
                     file_format="vtu", binary=False)
        r = vtkXMLUnstructuredGridReader()
        r.SetFileName(vtu)
        r.Update()
        grid = r.GetOutput()
        temp = vtkDoubleArray()
        temp.SetName("temp")
        for i in range(grid.GetNumberOfPoints()):
            temp.InsertNextValue(grid.GetPoint(i)[2] * 10)
        grid.GetPointData().AddArray(temp)
        out = os.path.join(OUT, "cube.vtk-writer.exo")
        w = vtkExodusIIWriter()
        w.SetFileName(out)
        w.SetInputData(grid)
        w.WriteAllTimeStepsOff()
        w.Write()
    with open(out, "rb") as f:
        magic = f.read(4)
    assert magic[:3] == b"CDF", f"VTK wrote {magic!r}, not classic netCDF"


def fuzz_seeds():
    seeds = os.path.join(HERE, "..", "fuzz", "exodus_reader")
    os.makedirs(seeds, exist_ok=True)
    with open(os.path.join(OUT, "mixed.cdf1.exo"), "rb") as f:
        b = bytearray(f.read())
    b[4:8] = b"\xff\xff\xff\xff"
    with open(os.path.join(seeds, "seed-streaming.exo"), "wb") as f:
        f.write(bytes(b))
    path = os.path.join(seeds, "seed-byte-record.exo")
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("time_step", None)
        nc.createDimension("num_nodes", 3)
        nc.createDimension("num_el_in_blk1", 1)
        nc.createDimension("num_nod_per_el1", 3)
        nc.createVariable("coordx", "f8", ("num_nodes",))[:] = [0, 1, 0]
        nc.createVariable("coordy", "f8", ("num_nodes",))[:] = [0, 0, 1]
        c = nc.createVariable("connect1", "i4", ("num_el_in_blk1", "num_nod_per_el1"))
        c.elem_type = "TRI3"
        c[:] = [[1, 2, 3]]
        nc.createVariable("flags", "i1", ("time_step",))[:] = [1, -2, 3]
    with open(os.path.join(OUT, "steps.cdf2.exo"), "rb") as f:
        b = f.read()
    with open(os.path.join(seeds, "seed-truncated.exo"), "wb") as f:
        f.write(b[: len(b) - 100])


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    mixed()
    steps("steps.cdf2.exo", False)
    steps("truth-table.cdf2.exo", True)
    tetra10()
    vtk_writer()
    fuzz_seeds()
