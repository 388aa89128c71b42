#!/usr/bin/python3
"""Writes the binary PLY files with face properties into tests/data/surface/ (issue 14):

    /usr/bin/python3 tests/data/tools/make_surface_props.py

faceprops.bin.ply  binary_little_endian; per face: uchar red, the vertex_indices list (uchar
                   count, int indices), uchar green, uchar blue, short flags, double quality,
                   then a list property the reader skips (texcoord, float); faces of 3, 4, 3, 5
                   and 4 vertices in that order, so the blocks interleave.
faceprops.be.ply   the same values, binary_big_endian, vertex_indices with a uint count and uint
                   indices, without the texcoord list.
The values are written with struct, so they are what the file holds; FACES below is the table
the tests compare against.
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "surface")

POINTS = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (2, 0, 0), (2, 1, 0)]
# (indices, red, green, blue, flags, quality)
FACES = [([0, 1, 2], 10, 11, 12, -5, 0.5),
         ([0, 1, 2, 3], 20, 21, 22, 7, 0.25),
         ([1, 4, 2], 30, 31, 32, 32767, 1.5),
         ([0, 1, 4, 5, 3], 50, 51, 52, -32768, 3.75),
         ([1, 4, 5, 2], 40, 41, 42, 0, -2.0)]


def write(name, endian, count_type, index_type, texcoord):
    head = ["ply", f"format binary_{endian}_endian 1.0",
            "comment face properties around the index list; tests/data/tools/make_surface_props.py",
            f"element vertex {len(POINTS)}", "property float x", "property float y",
            "property float z", f"element face {len(FACES)}", "property uchar red",
            f"property list {count_type} {index_type} vertex_indices", "property uchar green",
            "property uchar blue", "property short flags", "property double quality"]
    if texcoord:
        head.append("property list uchar float texcoord")
    head.append("end_header")
    e = "<" if endian == "little" else ">"
    cfmt = {"uchar": "B", "uint": "I"}[count_type]
    ifmt = {"int": "i", "uint": "I"}[index_type]
    body = b"".join(struct.pack(e + "3f", *p) for p in POINTS)
    for idx, r, g, b, flags, q in FACES:
        body += struct.pack(e + "B", r)
        body += struct.pack(e + cfmt + ifmt * len(idx), len(idx), *idx)
        body += struct.pack(e + "BBhd", g, b, flags, q)
        if texcoord:
            body += struct.pack(e + "B4f", 4, 0.0, 0.5, 1.0, 0.5)
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(("\n".join(head) + "\n").encode() + body)


if __name__ == "__main__":
    write("faceprops.bin.ply", "little", "uchar", "int", True)
    write("faceprops.be.ply", "big", "uint", "uint", False)
