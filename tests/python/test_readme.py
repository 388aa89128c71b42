"""The README's first-five-minutes block runs as written (issue 16): extracted from README.md,
run by bash -e from the repository root with the build this test suite runs against, and its
output checked for what the README promises (the attached frame's shape and cell types)."""
import os
import pathlib
import re
import subprocess

import conftest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def tour_block():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- readme-tour:[^>]*-->\s*```sh\n(.*?)```", text, re.S)
    assert m, "README.md has no readme-tour block"
    return m.group(1)


def test_the_readme_tour_runs_as_written():
    block = tour_block()
    assert "meshdockctl shutdown" in block  # it stops what it started
    env = dict(os.environ, MESHDOCK_BUILD_DIR=str(conftest.BUILD))
    env.pop("MESHDOCK_ADDR", None)
    sock = pathlib.Path("/tmp/meshdock-tour.sock")
    assert not sock.exists(), f"{sock} exists: another tour is running"
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "torch.Size([300, 3]) ['triangle'" in r.stdout, r.stdout
    assert "points: 300 x 3 float64" in r.stdout, r.stdout
    assert not sock.exists()
    assert not [f for f in os.listdir("/dev/shm") if f.startswith("tour.")]


def test_the_readme_names_every_format_the_readers_take(tmp_path):
    # The list is the readers' own (their refusal of an unknown extension lists them): a reader
    # added without the README saying so fails here (.vts ... .pvti were missing from it).
    import meshdock as md
    (tmp_path / "x.qqq").write_text("x")
    try:
        md.read(tmp_path / "x.qqq")
        raise AssertionError("an unknown extension was read")
    except md.ReadError as e:
        formats = re.search(r"\(supported: ([a-z0-9, ]+)\)", str(e)).group(1).split(", ")
    assert len(formats) >= 16 and "pvti" in formats, formats
    intro = (ROOT / "README.md").read_text(encoding="utf-8").split("## ")[0]
    missing = [f for f in formats if f"`.{f}`" not in intro]
    assert missing == [], f"README.md's introduction does not name: {missing}"
