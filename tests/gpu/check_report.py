"""Checks a gpu-check report (ctest gpu_check.no_gpu): the JSON scripts/gpu-check --no-gpu
--quick wrote must hold every check below with the status expected here, their key figures, and
no failure. Run after the script:  python3 check_report.py OUT/gpu-check.json
"""
import json
import sys

# Run with --no-gpu: the checks everything but CUDA does, and the CUDA ones, skipped.
PASS = ["environment", "mesh_generate", "build_cpp_consumer", "daemon_start",
        "load_big", "load_to_consumer", "load_blocks", "consumer_cpp_big", "consumer_cpp_blocks",
        "consumer_torch_big", "consumer_torch_blocks", "republish_while_held",
        "sigkill_consumer", "unload_while_held", "load_latency_mesh", "latency_1_consumer", "latency_8_consumers",
        "tensor_publish", "cuda_link_texture", "field_stream", "sigkill_daemon", "gpu_pytests"]
SKIPPED = ["gpu_visible", "cuda_ipc_baseline", "consumer_cupy_big", "consumer_cupy_blocks", "gpu_by_uuid",
           "stream_semantics", "ipc_open_cost",
           "h2d_upload", "late_reader", "late_reader_cpp", "consumer_jax_big", "consumer_jax_blocks"]


def main(path):
    doc = json.load(open(path))
    checks = {c["name"]: c for c in doc["checks"]}
    errors = []
    for name in PASS:
        c = checks.get(name)
        if c is None or c["status"] != "pass":
            errors.append(f"{name}: expected pass, got "
                          f"{c and c['status']}: {c and c['reason'][:400]}")
    for name in SKIPPED:
        c = checks.get(name)
        if c is None or c["status"] != "skipped" or "no GPU" not in c["reason"]:
            errors.append(f"{name}: expected skipped (no GPU), got {c and c['status']}")
    extra = sorted(set(checks) - set(PASS) - set(SKIPPED))
    if extra:
        errors.append(f"checks this test does not know: {extra} (add them here)")
    if not errors:
        f = {n: checks[n]["figures"] for n in PASS}
        want = [
            ("daemon_start backend host", f["daemon_start"].get("backend") == "host"),
            ("load_to_consumer on the host (DLPack device 1)",
             f["load_to_consumer"].get("device", [0])[0] == 1),
            ("load_to_consumer: a wake time", 0 < f["load_to_consumer"].get("load_to_wake_s", 0) < 30),
            ("multi-block mesh with regions: 11 arrays",
             f["consumer_cpp_blocks"].get("arrays") == 11 == f["consumer_torch_blocks"].get("arrays")),
            ("republish: fresh buffers (version bumped)",
             f["republish_while_held"]["version_after"] > f["republish_while_held"]["version_before"]),
            ("republish: the held frame is older than the newest",
             f["republish_while_held"]["newest_frame"] > f["republish_while_held"]["held_frame"]),
            ("sigkill_consumer: lease reclaimed, no fresh buffer",
             f["sigkill_consumer"]["reclaim_s"] is not None
             and f["sigkill_consumer"]["version_after"] == f["sigkill_consumer"]["version_before"]),
            ("latency_1: wake p50 > 0", f["latency_1_consumer"]["wake_p50_us"] > 0),
            ("latency_8: 8 consumers", f["latency_8_consumers"]["consumers"] == 8),
            ("tensor_publish: torch reads frame.tensor on the host",
             f["tensor_publish"]["torch"]["ok"] and f["tensor_publish"]["torch"]["device"][0] == 1),
            ("cuda_link_texture: 512 x 512 x 4 float32 from host handles",
             (f["cuda_link_texture"]["width"], f["cuda_link_texture"]["height"],
              f["cuda_link_texture"]["num_comps"], f["cuda_link_texture"]["cuda_link_dtype"],
              f["cuda_link_texture"]["device"]) == (512, 512, 4, "float32", "host")),
            ("field_stream: the ring kept the mesh and torch saw frames after its first round",
             f["field_stream"]["kept_bytes"] > 0
             and f["field_stream"]["torch-fields"]["last_frame"] >= 4
             and f["field_stream"]["torch-fields"]["wrong"] == 0),
            ("gpu_pytests: test_payload_gpu.py collected, every test skipped for want of a GPU",
             f["gpu_pytests"]["tests"] >= 5 and f["gpu_pytests"]["skipped"] == f["gpu_pytests"]["tests"]),
            ("sigkill_daemon: ProducerGone in both",
             all(v["producer_gone"] for k, v in f["sigkill_daemon"].items() if isinstance(v, dict))),
        ]
        errors += [w for w, ok in want if not ok]
    if doc.get("ok") is not (not doc.get("failed")) or doc["counts"]["fail"]:
        errors.append(f"report: ok={doc.get('ok')}, failed={doc.get('failed')}")
    for e in errors:
        print(f"check_report: {e}")
    print(f"check_report: {path}: {len(checks)} checks, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
