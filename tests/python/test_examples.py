"""The Python examples in clients/examples run against a live meshdockd (they attach with
$MESHDOCK_PREFIX, as a deployment sets it) and print what they read. CuPy's needs a GPU and runs
in scripts/gpu-check's environment only."""
import os
import subprocess
import sys

import numpy as np
import pytest

import conftest
import meshdock
from daemon_util import Daemon, shm_names

EXAMPLES = conftest.ROOT / "clients" / "examples"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("examples"), ("box.v41.msh",))
    d.load("box.v41.msh", "box")
    yield d
    assert d.stop() == 0, d.stderr
    assert shm_names(d.prefix) == []


def run(daemon, script, *args):
    env = dict(os.environ, PYTHONPATH=str(conftest.BUILD / "python"),
               MESHDOCK_PREFIX=daemon.prefix)
    r = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def box(data_dir):
    return meshdock.read(data_dir / "meshes" / "box.v41.msh")


def test_numpy_consumer(daemon, data_dir):
    out = run(daemon, "numpy_consumer.py", "box", "--prefix", daemon.prefix)
    m = box(data_dir)
    assert out.startswith(f"frame 1: {len(m.points)} points, bbox ")
    assert f"  tetra: {len(m.cells[-1].data)} cells" in out


def test_numpy_consumer_reads_tensors_and_bool_fields(daemon, data_dir):
    """A publish_tensor slot raised AttributeError (frame.points is None), and a published bool
    field RuntimeError ("Unsupported dtype in DLTensor": numpy 1.24's from_dlpack)."""
    img = np.ones((6, 7, 4), np.float32)
    with meshdock.Client(daemon.addr) as c:
        c.publish_tensor("ex_img", img)
        out = run(daemon, "numpy_consumer.py", "ex_img")
        assert out.strip() == "frame 1: tensor float32 (6, 7, 4)", out
        c.load(daemon.root / "box.v41.msh", name="ex_box")
        n = len(box(data_dir).points)
        c.publish("ex_box", "point_data/flag", np.arange(n) % 2 == 0)
        out = run(daemon, "numpy_consumer.py", "ex_box")
        assert f"  point_data flag: bool ({n},)" in out, out
        c.unload("ex_box")
        c.unload("ex_img")


def test_torch_consumer(daemon, data_dir):
    pytest.importorskip("torch")
    out = run(daemon, "torch_consumer.py", "box")
    m = box(data_dir)
    assert out.startswith(f"frame 1: ({len(m.points)}, 3) points on cpu, "
                          f"{len(m.cells[-1].data)} {m.cells[-1].type} cells"), out


def test_torch_consumer_reads_a_tensor_slot(daemon):
    # frame.points is None on a publish_tensor slot: torch.from_dlpack(None) raised.
    pytest.importorskip("torch")
    with meshdock.Client(daemon.addr) as c:
        c.publish_tensor("ex_timg", np.ones((6, 7, 4), np.float32))
        out = run(daemon, "torch_consumer.py", "ex_timg")
        assert out.strip() == "frame 1: tensor torch.float32 (6, 7, 4) on cpu", out
        c.unload("ex_timg")


def test_torch_dataloader(daemon, data_dir):
    pytest.importorskip("torch")
    out = run(daemon, "torch_dataloader.py", "box", "--workers", "2", "--items", "8")
    lines = out.splitlines()
    assert len(lines) == 2 and all(l.startswith("frames [1, 1, 1, 1]: batch (4, 64, 3)")
                                   for l in lines), out
    m = box(data_dir)
    pts, tets = np.asarray(m.points, np.float64), m.cells[-1].data
    lo, hi = pts.min(), pts.max()
    means = [float(l.rsplit("mean ", 1)[1]) for l in lines]
    assert all(lo <= x <= hi for x in means), (means, lo, hi)
    assert len(tets) > 64
