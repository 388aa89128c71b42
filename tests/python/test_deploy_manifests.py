"""The deployment files under config/k8s and config/slurm (docs/deployment.md).

No Kubernetes API server is reachable here (kubectl's validation and dry runs need one), so
the manifests are checked offline:
  - schema: every field of every document must be a field of the Kubernetes object it names,
    with the right type, and required fields present (the models of Debian's
    python3-kubernetes, walked strictly: the client itself ignores unknown fields);
  - properties docs/deployment.md promises: host namespaces, the socket's hostPath, the
    ConfigMap's keys against daemon/service/config.cpp, probes that run a meshdockctl
    subcommand that exists, consumers that can reach the daemon, dropped capabilities.
With a build (MESHDOCK_BUILD_DIR), the real binaries are asked too: meshdockd accepts the
ConfigMap's meshdockd.json, the probe command answers 0 while a daemon serves and 3 once it
has gone, and the Slurm prolog/epilog start and stop a daemon in a fake Slurm environment.
"""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
K8S = ROOT / "config" / "k8s"
SLURM = ROOT / "config" / "slurm"
CONFIG_CPP = ROOT / "daemon" / "service" / "config.cpp"
BUILD = pathlib.Path(os.environ["MESHDOCK_BUILD_DIR"]) if os.environ.get("MESHDOCK_BUILD_DIR") \
    else None
DATA = pathlib.Path(os.environ.get("MESHDOCK_TEST_DATA", ROOT / "tests" / "data"))

yaml = pytest.importorskip("yaml", reason="python3-yaml is not installed (scripts/setup)")

# apiVersion each kind must use (the stable groups; no beta APIs in the shipped manifests).
API_VERSIONS = {"Namespace": "v1", "ConfigMap": "v1", "DaemonSet": "apps/v1",
                "Job": "batch/v1", "Pod": "v1"}
DNS_1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def load_docs():
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs.append((path.name, doc))
    return docs


DOCS = load_docs()


def only(kind):
    found = [d for _, d in DOCS if d.get("kind") == kind]
    assert len(found) == 1, f"expected one {kind} under config/k8s, found {len(found)}"
    return found[0]


def build_bin(name):
    if BUILD is None:
        pytest.skip("MESHDOCK_BUILD_DIR is not set (no build to run)")
    path = BUILD / "bin" / name
    if not path.exists():
        pytest.skip(f"{path} is not built")
    return path


def daemon_keys():
    """Every key parse_config accepts, read from its source: renaming one there fails here."""
    keys = set(re.findall(r'key == "([a-z_]+)"', CONFIG_CPP.read_text()))
    assert {"listen", "roots", "socket_mode", "prefix"} <= keys, keys  # the grep itself works
    return keys


def pod_spec(doc):
    return doc["spec"]["template"]["spec"] if doc["kind"] != "Pod" else doc["spec"]


def volume(spec, name):
    found = [v for v in spec.get("volumes", []) if v["name"] == name]
    assert found, f"no volume '{name}'"
    return found[0]


def mount_of(container, spec, host_path):
    """The container's mount of the hostPath volume at host_path (None if it has none)."""
    for m in container.get("volumeMounts", []):
        v = volume(spec, m["name"])
        if v.get("hostPath", {}).get("path") == host_path:
            return m
    return None


def env_of(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


# ---- every document ----------------------------------------------------------------------------

def test_the_manifests_are_there():
    kinds = sorted(d["kind"] for _, d in DOCS)
    assert kinds == ["ConfigMap", "DaemonSet", "Job", "Namespace"], kinds


@pytest.mark.parametrize("where,doc", DOCS, ids=[f"{f}:{d.get('kind')}" for f, d in DOCS])
def test_document_header(where, doc):
    kind = doc.get("kind")
    assert kind in API_VERSIONS, f"{where}: unexpected kind {kind!r}"
    assert doc.get("apiVersion") == API_VERSIONS[kind], f"{where}: {kind} apiVersion"
    meta = doc.get("metadata")
    assert isinstance(meta, dict) and DNS_1123.match(meta.get("name", "")), f"{where}: name"
    if kind != "Namespace":
        assert meta.get("namespace") == "meshdock", f"{where}: {kind} is not in namespace meshdock"
    assert isinstance(meta.get("labels"), dict) and meta["labels"], f"{where}: no labels"


# ---- schema (python3-kubernetes models) --------------------------------------------------------

def _check_value(models, value, typ, path):
    if typ.startswith("list["):
        assert isinstance(value, list), f"{path}: expected a list"
        for i, item in enumerate(value):
            _check_value(models, item, typ[5:-1], f"{path}[{i}]")
    elif typ.startswith("dict("):
        assert isinstance(value, dict), f"{path}: expected a mapping"
        inner = typ[typ.index(",") + 1:-1].strip()
        for k, item in value.items():
            assert isinstance(k, str), f"{path}: key {k!r} is not a string"
            _check_value(models, item, inner, f"{path}.{k}")
    elif typ == "str":
        assert isinstance(value, str), f"{path}: expected a string, got {value!r}"
    elif typ == "int":
        assert isinstance(value, int) and not isinstance(value, bool), f"{path}: not an int"
    elif typ == "bool":
        assert isinstance(value, bool), f"{path}: expected true/false, got {value!r}"
    elif typ == "float":
        assert isinstance(value, (int, float)) and not isinstance(value, bool), path
    elif typ in ("object", "datetime", "date"):
        pass  # IntOrString and friends
    else:
        _check_model(models, value, typ, path)


def _check_model(models, obj, model, path):
    cls = getattr(models, model)
    assert isinstance(obj, dict), f"{path}: expected a {model} mapping"
    by_json = {j: p for p, j in cls.attribute_map.items()}
    for key, value in obj.items():
        assert key in by_json, f"{path}: '{key}' is not a field of {model} " \
                               f"(known: {sorted(by_json)})"
        _check_value(models, value, cls.openapi_types[by_json[key]], f"{path}.{key}")


@pytest.mark.parametrize("where,doc", DOCS, ids=[f"{f}:{d.get('kind')}" for f, d in DOCS])
def test_schema(where, doc):
    k8s = pytest.importorskip("kubernetes.client",
                              reason="python3-kubernetes is not installed (scripts/setup)")
    model = "V1" + doc["kind"]
    _check_model(k8s.models, doc, model, f"{where}:{doc['kind']}")
    # Required fields: the models' constructors refuse a missing one (client-side validation).
    k8s.ApiClient()._ApiClient__deserialize(doc, model)


def test_schema_check_catches_a_typo():
    """The strict walk is what finds misspelt fields: the client library would drop them."""
    k8s = pytest.importorskip("kubernetes.client",
                              reason="python3-kubernetes is not installed (scripts/setup)")
    ds = json.loads(json.dumps(only("DaemonSet")))
    ds["spec"]["template"]["spec"]["hostIpc"] = True
    with pytest.raises(AssertionError, match="'hostIpc' is not a field of V1PodSpec"):
        _check_model(k8s.models, ds, "V1DaemonSet", "DaemonSet")


# ---- properties docs/deployment.md promises ---------------------------------------------------

@pytest.mark.parametrize("kind", ["DaemonSet", "Job"])
def test_every_mount_names_a_volume_and_every_volume_is_used(kind):
    spec = pod_spec(only(kind))
    names = [v["name"] for v in spec["volumes"]]
    assert len(names) == len(set(names)), f"{kind}: a volume name repeats"
    used = set()
    for c in spec["containers"] + spec.get("initContainers", []):
        for m in c.get("volumeMounts", []):
            assert m["name"] in names, f"{kind}/{c['name']}: mount of unknown volume {m['name']}"
            used.add(m["name"])
    assert used == set(names), f"{kind}: volumes nobody mounts: {set(names) - used}"


def config_json():
    return json.loads(only("ConfigMap")["data"]["meshdockd.json"])


def daemon_container():
    spec = pod_spec(only("DaemonSet"))
    found = [c for c in spec["containers"] if c["name"] == "meshdockd"]
    assert len(found) == 1
    return spec, found[0]


def test_namespace_allows_host_namespaces():
    labels = only("Namespace")["metadata"]["labels"]
    assert only("Namespace")["metadata"]["name"] == "meshdock"
    # "baseline" forbids hostIPC / hostNetwork / hostPID / hostPath: the daemon could not start.
    assert labels.get("pod-security.kubernetes.io/enforce") == "privileged"


def test_configmap_uses_only_keys_the_daemon_knows():
    cfg = config_json()
    unknown = set(cfg) - daemon_keys()
    assert not unknown, f"meshdockd.json keys meshdockd would refuse: {sorted(unknown)}"
    assert cfg["listen"] == "unix:/run/meshdock/meshdockd.sock"
    assert cfg["socket_mode"] == "0660" and cfg["shm_mode"] == "0640"
    assert cfg["roots"], "no roots: nothing could be loaded"


def test_daemonset_shares_the_node_namespaces():
    spec, _ = daemon_container()
    assert spec.get("hostIPC") is True  # /dev/shm and CUDA IPC
    assert spec.get("hostNetwork") is True  # the abstract registration socket
    assert spec.get("hostPID") is True  # registration checks pids on both sides


def test_daemonset_socket_directory_is_the_node_run_meshdock():
    spec, c = daemon_container()
    m = mount_of(c, spec, "/run/meshdock")
    assert m is not None, "the daemon does not mount the hostPath /run/meshdock"
    assert m["mountPath"] == "/run/meshdock" and not m.get("readOnly", False)
    sock = config_json()["listen"].removeprefix("unix:")
    assert pathlib.PurePosixPath(sock).parent == pathlib.PurePosixPath(m["mountPath"])


def test_daemonset_reads_the_configmap():
    spec, c = daemon_container()
    cm = only("ConfigMap")["metadata"]["name"]
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    config_volumes = [v["name"] for v in spec["volumes"] if v.get("configMap", {}).get("name") == cm]
    assert len(config_volumes) == 1
    m = mounts[config_volumes[0]]
    assert m.get("readOnly") is True
    cmd = c["command"]
    assert pathlib.PurePosixPath(cmd[0]).name == "meshdockd"
    i = cmd.index("--config")
    assert cmd[i + 1] == f"{m['mountPath']}/meshdockd.json"


def test_daemonset_roots_are_mounted_read_only():
    spec, c = daemon_container()
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    for root in config_json()["roots"]:
        assert root in mounts, f"root {root} is not a mount of the daemon container"
        assert mounts[root].get("readOnly") is True, f"root {root} is writable"
        v = volume(spec, mounts[root]["name"])
        assert "hostPath" in v or "persistentVolumeClaim" in v


def test_daemonset_security_context():
    spec, c = daemon_container()
    pod = spec["securityContext"]
    assert isinstance(pod.get("runAsUser"), int) and pod["runAsUser"] > 0
    assert isinstance(pod.get("runAsGroup"), int) and pod["runAsGroup"] > 0
    assert pod.get("runAsNonRoot") is True
    sc = c["securityContext"]
    assert sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"]
    assert sc.get("readOnlyRootFilesystem") is True
    assert sc.get("allowPrivilegeEscalation") is False
    assert c["resources"]["limits"].get("memory"), "no memory limit (host slots are its memory)"
    # The only root container: the one that hands /run/meshdock to the daemon's uid.
    for init in spec.get("initContainers", []):
        isc = init["securityContext"]
        assert isc["capabilities"]["drop"] == ["ALL"]
        assert isc["capabilities"].get("add", []) == ["CHOWN"]
        assert isc.get("allowPrivilegeEscalation") is False
        script = " ".join(init["command"])
        assert f"{pod['runAsUser']}:{pod['runAsGroup']}" in script


@pytest.mark.skipif(os.getuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to run the init container's script")
def test_run_dir_init_container_works_with_chown_alone_and_twice(tmp_path):
    """The init container's script, run as root with CAP_CHOWN only (its securityContext) on
    a directory made as kubelet makes it, then again as a restarted pod would: the daemon's
    uid:gid owns it, mode 0750, both times."""
    spec, _ = daemon_container()
    pod = spec["securityContext"]
    init = spec["initContainers"][0]
    assert init["securityContext"]["capabilities"]["add"] == ["CHOWN"]
    run = tmp_path / "run"
    run.mkdir(mode=0o755)
    script = init["command"][2].replace("/run/meshdock", str(run))
    for attempt in (1, 2):
        r = subprocess.run(["setpriv", "--bounding-set=-all,+chown", *init["command"][:2], script],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"run {attempt}: {r.stderr}"
        st = run.stat()
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == \
            (pod["runAsUser"], pod["runAsGroup"], 0o750), f"run {attempt}"


def test_daemonset_gpu_without_taking_one():
    spec, c = daemon_container()
    # A device-plugin request would give this pod a GPU of its own (docs/deployment.md, GPUs).
    for section in ("limits", "requests"):
        assert "nvidia.com/gpu" not in c["resources"].get(section, {})
    assert spec.get("runtimeClassName") == "nvidia"
    assert env_of(c).get("NVIDIA_VISIBLE_DEVICES") == "all"


def probes():
    _, c = daemon_container()
    found = {k: c[k] for k in ("startupProbe", "readinessProbe", "livenessProbe") if k in c}
    assert set(found) == {"startupProbe", "readinessProbe", "livenessProbe"}
    return found


def test_probes_run_meshdockctl_health_on_the_socket():
    listen = config_json()["listen"]
    for name, p in probes().items():
        assert "grpc" not in p and "httpGet" not in p, f"{name}: the daemon serves a Unix socket"
        cmd = p["exec"]["command"]
        assert pathlib.PurePosixPath(cmd[0]).name == "meshdockctl", name
        assert cmd[cmd.index("--addr") + 1] == listen, name
        assert cmd[-1] == "health", name
        assert float(cmd[cmd.index("--timeout") + 1]) < p["timeoutSeconds"], \
            f"{name}: meshdockctl's own deadline must end before the probe's"


def test_probe_subcommand_and_flags_exist():
    ctl = build_bin("meshdockctl")
    out = subprocess.run([ctl, "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    for name, p in probes().items():
        for word in p["exec"]["command"][1:]:
            if word.startswith("--") or re.fullmatch(r"[a-z]+", word):
                assert re.search(rf"(^|[\s\[|,]){re.escape(word)}($|[\s\]|])", out.stdout), \
                    f"{name}: meshdockctl --help does not know '{word}'"


def test_probe_command_answers_like_the_probe_expects(tmp_path):
    """The probe's exact argv (binary and socket swapped for the build's and a temp one): 0
    while meshdockd serves, non-zero once it has gone."""
    daemon, ctl = build_bin("meshdockd"), build_bin("meshdockctl")
    sock = tmp_path / "md.sock"
    cmd = list(probes()["livenessProbe"]["exec"]["command"])
    cmd[0] = str(ctl)
    cmd[cmd.index("--addr") + 1] = f"unix:{sock}"
    proc = subprocess.Popen([daemon, "--listen", f"unix:{sock}", "--root", str(tmp_path),
                             "--prefix", f"mdprobe{os.getpid()}.", "--device", "cpu"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "ready on" in proc.stdout.readline()
        ok = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert ok.returncode == 0 and "SERVING" in ok.stdout, ok
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    gone = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert gone.returncode == 3, gone


def test_daemon_accepts_the_configmap(tmp_path):
    """meshdockd itself parses the ConfigMap's file (roots pointed at directories that exist
    here; every other key and value as shipped)."""
    daemon = build_bin("meshdockd")
    cfg = config_json()
    cfg["roots"] = [str(tmp_path)]
    if "export_roots" in cfg:
        cfg["export_roots"] = [str(tmp_path)]
    path = tmp_path / "meshdockd.json"
    path.write_text(json.dumps(cfg))
    out = subprocess.run([daemon, "--config", path, "--print-config"], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    effective = json.loads(out.stdout)
    for key, value in cfg.items():
        assert effective[key] == value, key


def consumer():
    job = only("Job")
    spec = pod_spec(job)
    assert len(spec["containers"]) == 1
    return spec, spec["containers"][0]


def test_consumer_shares_the_daemons_namespaces_and_socket():
    ds_spec, d = daemon_container()
    spec, c = consumer()
    for ns in ("hostIPC", "hostNetwork", "hostPID"):
        assert spec.get(ns) is True, f"consumer without {ns}"
    m = mount_of(c, spec, "/run/meshdock")
    assert m is not None, "the consumer does not mount the node's /run/meshdock"
    assert env_of(c)["MESHDOCK_ADDR"] == config_json()["listen"]
    sock = config_json()["listen"].removeprefix("unix:")
    assert pathlib.PurePosixPath(sock).parent == pathlib.PurePosixPath(m["mountPath"])
    # Same node pool and GPU view as the daemon.
    assert spec.get("nodeSelector") == ds_spec.get("nodeSelector")
    assert spec.get("runtimeClassName") == ds_spec.get("runtimeClassName")
    for var in ("NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"):
        assert env_of(c).get(var) == env_of(d).get(var), var


def test_consumer_identity_matches_the_daemons_group_and_uid():
    ds_pod = daemon_container()[0]["securityContext"]
    spec, c = consumer()
    pod = spec["securityContext"]
    assert ds_pod["runAsGroup"] in pod.get("supplementalGroups", []), \
        "the consumer is not in the daemon's group: EACCES on the socket and the segments"
    assert pod["runAsUser"] != ds_pod["runAsUser"]
    assert env_of(c)["MESHDOCK_DAEMON_UID"] == str(ds_pod["runAsUser"])
    sc = c["securityContext"]
    assert sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"]
    assert sc.get("allowPrivilegeEscalation") is False


def test_consumer_program_uses_the_sdk_as_it_is():
    _, c = consumer()
    assert c["command"][:2] == ["python3", "-c"]
    code = c["command"][2]
    compile(code, "consumer-job.yaml", "exec")
    assert "reattach=True" in code
    try:
        import inspect
        import meshdock
    except ImportError:
        pytest.skip("the meshdock package is not importable (no build)")
    assert "reattach" in inspect.signature(meshdock.attach).parameters
    assert hasattr(meshdock.Client, "ls") and hasattr(meshdock.Client, "load")


# ---- Slurm ---------------------------------------------------------------------------------------

SCRIPTS = ["prolog.sh", "epilog.sh", "taskprolog.sh"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_slurm_script_syntax(script):
    path = SLURM / script
    assert os.access(path, os.X_OK), f"{path} is not executable"
    subprocess.run(["bash", "-n", path], check=True)


@pytest.mark.parametrize("script", SCRIPTS)
def test_slurm_script_shellcheck(script):
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (scripts/setup)")
    out = subprocess.run(["shellcheck", "-s", "bash", SLURM / script], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stdout


def shm_objects(prefix):
    return sorted(p.name for p in pathlib.Path("/dev/shm").iterdir() if p.name.startswith(prefix))


class FakeSlurm:
    """A job on a fake Slurm node: the environment slurmd gives the Prolog and Epilog, the
    build's binaries, and a run directory under a temporary directory instead of /run."""

    def __init__(self, base: pathlib.Path, job: int, user: str, uid: int, roots):
        self.base, self.job, self.uid = base, job, uid
        self.env = dict(os.environ)
        self.env.update({
            "SLURM_JOB_ID": str(job), "SLURM_JOB_USER": user, "SLURM_JOB_UID": str(uid),
            "TMPDIR": str(base), "MESHDOCK_SLURM_RUNDIR": str(base),
            "MESHDOCK_SLURM_DEFAULTS": str(base / "no-defaults"),
            "MESHDOCKD": str(build_bin("meshdockd")), "MESHDOCKCTL": str(build_bin("meshdockctl")),
            "MESHDOCK_SLURM_ROOTS": ":".join(str(r) for r in roots),
            "MESHDOCK_SLURM_WHEN": "always", "MESHDOCK_SLURM_DEVICE": "cpu",
            "MESHDOCK_SLURM_START_TIMEOUT": "30", "MESHDOCK_SLURM_STOP_TIMEOUT": "5",
        })
        self.env.pop("SLURM_JOB_GID", None)
        self.env.pop("SLURM_JOB_CONSTRAINTS", None)
        self.dir = base / f"meshdock-{job}"
        self.sock = self.dir / "sock" / "meshdockd.sock"
        self.prefix = f"md{job}."

    def run(self, script, **extra):
        env = dict(self.env, **extra)
        return subprocess.run([SLURM / script], env=env, capture_output=True, text=True,
                              timeout=60)

    def ctl(self, *args, env=None):
        return subprocess.run([build_bin("meshdockctl"), "--addr", f"unix:{self.sock}",
                               "--timeout", "5", *args], capture_output=True, text=True,
                              timeout=30, env=env)

    def pid(self):
        return int((self.dir / "meshdockd.pid").read_text())


def alive(pid):
    try:
        state = pathlib.Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return not re.search(r"^State:\s+[ZX]", state, re.M)


_job_counter = [0]


def new_job_id():
    _job_counter[0] += 1
    return 7_000_000 + (os.getpid() % 100_000) * 10 + _job_counter[0]


@pytest.fixture
def job(tmp_path):
    meshes = tmp_path / "meshes"
    meshes.mkdir()
    shutil.copy(DATA / "meshes" / "box.v41b.msh", meshes)
    me = os.getuid()
    import pwd
    j = FakeSlurm(tmp_path, new_job_id(), pwd.getpwuid(me).pw_name, me, [meshes])
    yield j
    # Never leave a daemon or segments behind, whatever the test did.
    if j.dir.exists():
        j.run("epilog.sh")
    for name in shm_objects(j.prefix):
        (pathlib.Path("/dev/shm") / name).unlink()


def test_prolog_starts_a_daemon_the_task_finds_and_epilog_stops_it(job):
    r = job.run("prolog.sh")
    assert r.returncode == 0, r.stderr
    pid = job.pid()
    assert alive(pid) and pathlib.Path(f"/proc/{pid}/comm").read_text().strip() == "meshdockd"
    assert job.sock.is_socket() and (job.sock.stat().st_mode & 0o777) == 0o600
    assert (job.dir.stat().st_mode & 0o777) == 0o755 and job.dir.stat().st_uid == os.getuid()

    # The TaskProlog's output is what Slurm puts in the task's environment.
    t = job.run("taskprolog.sh")
    assert t.returncode == 0, t.stderr
    exported = dict(line.removeprefix("export ").split("=", 1) for line in t.stdout.splitlines())
    assert exported == {"MESHDOCK_ADDR": f"unix:{job.sock}", "MESHDOCK_PREFIX": job.prefix}
    task_env = dict(os.environ, **exported)
    h = subprocess.run([build_bin("meshdockctl"), "--timeout", "5", "health"], env=task_env,
                       capture_output=True, text=True, timeout=30)
    assert h.returncode == 0 and "SERVING" in h.stdout, h

    mesh = job.base / "meshes" / "box.v41b.msh"
    load = job.ctl("load", str(mesh), "--name", "box")
    assert load.returncode == 0, load.stderr
    assert f"{job.prefix}box" in shm_objects(job.prefix)
    assert all(os.stat(f"/dev/shm/{n}").st_mode & 0o077 == 0 for n in shm_objects(job.prefix))

    e = job.run("epilog.sh")
    assert e.returncode == 0, e.stderr
    assert not alive(pid)
    assert shm_objects(job.prefix) == []
    assert not job.dir.exists()
    assert "SIGTERM" not in e.stderr  # the Shutdown RPC sufficed


def test_epilog_kills_a_wedged_daemon_and_removes_its_segments(job):
    assert job.run("prolog.sh").returncode == 0
    pid = job.pid()
    mesh = job.base / "meshes" / "box.v41b.msh"
    assert job.ctl("load", str(mesh), "--name", "box").returncode == 0
    left = shm_objects(job.prefix)
    assert len(left) >= 3, left
    os.kill(pid, signal.SIGSTOP)  # answers nothing, cleans nothing
    e = job.run("epilog.sh", MESHDOCK_SLURM_STOP_TIMEOUT="1")
    assert e.returncode == 0, e.stderr
    assert "SIGKILL" in e.stderr and f"removed {len(left)} leftover segment" in e.stderr, e.stderr
    assert not alive(pid)
    assert shm_objects(job.prefix) == []


def test_epilog_does_not_signal_a_process_the_pid_file_names_wrongly(job):
    assert job.run("prolog.sh").returncode == 0
    real = job.pid()
    other = subprocess.Popen(["sleep", "60"])
    try:
        (job.dir / "meshdockd.pid").write_text(f"{other.pid}\n")
        e = job.run("epilog.sh")
        assert e.returncode == 0, e.stderr
        assert f"names {other.pid}, which is not this job's meshdockd" in e.stderr
        assert other.poll() is None, "the epilog signalled a process that is not meshdockd"
    finally:
        other.kill()
        other.wait()
    # The real daemon was not found through the pid file, so it is still there: stop it.
    assert alive(real)
    os.kill(real, signal.SIGTERM)
    for _ in range(400):  # up to 20 s: a loaded CI box
        if not alive(real):
            break
        time.sleep(0.05)
    assert not alive(real)


def test_prolog_runs_only_for_jobs_that_ask_when_so_configured(job):
    r = job.run("prolog.sh", MESHDOCK_SLURM_WHEN="constraint", SLURM_JOB_CONSTRAINTS="gpu&bigmem")
    assert r.returncode == 0 and not job.dir.exists()
    r = job.run("prolog.sh", MESHDOCK_SLURM_WHEN="constraint", SLURM_JOB_CONSTRAINTS="meshdockx")
    assert r.returncode == 0 and not job.dir.exists()
    assert job.run("taskprolog.sh").stdout == ""
    r = job.run("prolog.sh", MESHDOCK_SLURM_WHEN="constraint", SLURM_JOB_CONSTRAINTS="gpu&meshdock")
    assert r.returncode == 0, r.stderr
    assert job.ctl("health").returncode == 0


def test_prolog_fails_and_leaves_nothing_when_no_root_exists(job):
    r = job.run("prolog.sh", MESHDOCK_SLURM_ROOTS=str(job.base / "missing"))
    assert r.returncode == 1
    assert "no root directory exists" in r.stderr and "missing" in r.stderr
    assert not job.dir.exists()


def test_prolog_fails_when_the_daemon_cannot_start(job):
    r = job.run("prolog.sh", MESHDOCK_SLURM_DEVICE="tpu:0")  # meshdockd refuses: exit 2
    assert r.returncode == 1
    assert "did not come up" in r.stderr and "tpu:0" in r.stderr  # the daemon's log, quoted
    assert not job.dir.exists()


@pytest.mark.skipif(os.getuid() != 0, reason="dropping to another user needs root")
def test_prolog_runs_the_daemon_as_the_job_user():
    import pwd
    nobody = pwd.getpwnam("nobody")
    base = pathlib.Path(tempfile.mkdtemp(prefix="md-slurm-"))
    started = []
    try:
        base.chmod(0o755)  # the job's user reaches its socket directory and roots through it
        meshes = base / "meshes"
        meshes.mkdir(mode=0o755)
        shutil.copy(DATA / "meshes" / "box.v41b.msh", meshes)
        (meshes / "box.v41b.msh").chmod(0o644)
        j = FakeSlurm(base, new_job_id(), "nobody", nobody.pw_uid, [meshes])
        started.append(j)
        r = j.run("prolog.sh")
        assert r.returncode == 0, r.stderr
        status = pathlib.Path(f"/proc/{j.pid()}/status").read_text()
        uids = re.search(r"^Uid:\s+(\d+)\s+(\d+)\s+(\d+)", status, re.M).groups()
        assert uids == (str(nobody.pw_uid),) * 3
        assert j.sock.stat().st_uid == nobody.pw_uid
        assert (j.dir / "meshdockd.pid").stat().st_uid == 0  # the job cannot rewrite it
        assert j.ctl("load", str(meshes / "box.v41b.msh"), "--name", "box").returncode == 0
        assert {os.stat(f"/dev/shm/{n}").st_uid for n in shm_objects(j.prefix)} == \
            {nobody.pw_uid}
        e = j.run("epilog.sh")
        assert e.returncode == 0, e.stderr
        assert shm_objects(j.prefix) == [] and not j.dir.exists()
    finally:
        for j in started:  # a failed assertion must not leave the daemon running
            if j.dir.exists():
                j.run("epilog.sh")
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
