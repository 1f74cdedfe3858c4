"""The probe: the real no-GPU path of this machine, NVML through a fake module at the import
boundary, matching to the catalog, and --save followed by a prediction for "this machine"."""

import json
import sys
import time

import pytest

import probes
from advisor.data.catalog import user_catalog
from advisor.cli.main import main
from advisor.plan.machine import match_devices, this_machine_entry
from probes import amd, apple, nvidia

import nvml_fake as fake_pynvml  # the stand-in pynvml, next to this file


@pytest.fixture
def nvml(monkeypatch):
    """Install a fake pynvml; returns a function that configures it."""
    def install(**kw):
        mod = fake_pynvml.make(**kw)
        monkeypatch.setitem(sys.modules, "pynvml", mod)
        return mod
    return install


@pytest.fixture(scope="module")
def real_probe():
    """One real probe of this machine with its micro-benchmarks (a few seconds), shared."""
    return probes.probe(quick=False)


@pytest.mark.real   # it measures this machine: alone, not beside other tests (the real tier runs one at a time)
def test_real_probe_of_this_machine_without_gpu(real_probe):
    """No mocks: whatever this machine is, the probe reports CPU, RAM and measured figures."""
    result = real_probe
    c = result.cpu
    assert c.cores_logical >= 1 and c.model
    assert c.ram_gb and c.ram_gb > 0.5
    assert c.copy_gb_s and 0.5 < c.copy_gb_s < 5000
    assert c.fp32_gflops and c.fp32_gflops > 0.5
    # issue 27: inference reads; the figure it uses is the read pass, and one core's own is kept for --threads
    assert c.read_gb_s and 0.5 < c.read_gb_s < 5000 and c.bandwidth_gb_s == c.read_gb_s
    assert c.read_1t_gb_s and c.read_1t_gb_s <= c.read_gb_s * 1.5
    # the best read pass over a few seconds (STREAM's figure), never below the median one
    assert c.read_best_gb_s and c.read_gb_s <= c.read_best_gb_s < 5000
    if not result.nvidia.gpus:  # the CI machines and this one: no NVIDIA GPU
        assert result.nvidia.error
        assert any("NVIDIA" in n for n in result.notes)


def test_probe_cli_json_reports_no_accelerator(capsys):
    code = main(["--probe", "--json", "--quick"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["cpu"]["ram_gb"] > 0 and doc["cpu"]["cores_logical"] >= 1
    if not doc["accelerator_found"]:
        assert code == 3
        assert doc["nvidia"]["gpus"] == [] and doc["nvidia"]["error"]
    else:  # pragma: no cover - a machine with a GPU
        assert code == 0


def test_nvml_success_reads_every_field(nvml):
    mod = nvml(gpus=[fake_pynvml.RTX_4090, fake_pynvml.A100_SXM])
    rep = nvidia.read()
    assert rep.available and rep.error == "" and rep.driver_version == "560.35.03" and rep.cuda_version == "12.6"
    g, a = rep.gpus
    assert g.name == "NVIDIA GeForce RTX 4090" and g.memory_total_gb == pytest.approx(25.757, abs=0.01)
    # 384 bits / 8 × 10501 MHz × 2 = 1008 GB/s: the catalog's figure
    assert g.bandwidth_gb_s == pytest.approx(1008.1, abs=0.1)
    assert a.bandwidth_gb_s == pytest.approx(2039.0, abs=0.5) and a.nvlink_active == 12
    assert g.compute_capability == "8.9" and g.power_limit_w == 450 and g.pcie_gen == 4
    assert g.errors == {"nvlink": "not supported"} and g.nvlink_active is None
    assert mod.calls == {"init": 1, "shutdown": 1}


def test_nvml_fields_not_supported_are_recorded_and_the_rest_read(nvml):
    nvml(gpus=[fake_pynvml.RTX_4090], unsupported={"nvmlDeviceGetMemoryBusWidth", "nvmlDeviceGetPowerManagementLimit"})
    (g,) = nvidia.read().gpus
    assert g.errors["bus_width"] == "not supported" and g.errors["power_limit"] == "not supported"
    assert g.bandwidth_gb_s is None and g.power_limit_w is None
    assert g.memory_total_gb and g.name  # everything else still read


@pytest.mark.parametrize("error,message", [
    (fake_pynvml.NVMLError_LibraryNotFound, "NVML library not found"),
    (fake_pynvml.NVMLError_DriverNotLoaded, "not loaded"),
    (fake_pynvml.NVMLError_LibRmVersionMismatch, "version mismatch"),
])
def test_nvml_library_failures_become_one_sentence(nvml, error, message):
    nvml(init_error=error)
    rep = nvidia.read()
    assert not rep.available and message in rep.error and rep.gpus == []


def test_missing_pynvml_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    rep = nvidia.read()
    assert "not installed" in rep.error


def test_probe_cli_with_a_gpu_exits_0_and_matches_the_catalog(nvml, capsys):
    nvml(gpus=[fake_pynvml.RTX_4090])
    code = main(["--probe", "--quick"])
    out = capsys.readouterr().out
    assert code == 0
    assert "GPU 0: NVIDIA GeForce RTX 4090" in out and "GeForce RTX 4090 (rtx-4090) · match: exact" in out


def test_matching_says_how_sure_it_is(nvml):
    cat = user_catalog()
    odd = dict(fake_pynvml.RTX_4090, memclock=9000)  # a card with slower memory than the catalog's
    nvml(gpus=[fake_pynvml.A100_SXM, odd, dict(fake_pynvml.RTX_4090, name="NVIDIA Quantum 9000")])
    result = probes.probe(quick=True)
    m = {x.device: x for x in match_devices(cat, result)}
    assert m["GPU 0: NVIDIA A100-SXM4-80GB"].hardware.key == "a100-sxm4-80gb"
    assert m["GPU 0: NVIDIA A100-SXM4-80GB"].confidence == "exact"
    assert m["GPU 1: NVIDIA GeForce RTX 4090"].confidence == "partial"
    assert "bandwidth: probed 864.0 GB/s, catalog 1,008.0 GB/s" in m["GPU 1: NVIDIA GeForce RTX 4090"].differences
    assert m["GPU 2: NVIDIA Quantum 9000"].hardware is None and m["GPU 2: NVIDIA Quantum 9000"].confidence == "none"


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_save_then_predict_this_machine_with_a_gpu(nvml, capsys, private_user_data):
    nvml(gpus=[fake_pynvml.RTX_4090])
    assert main(["--probe", "--quick", "--save"]) == 0
    assert (private_user_data / "this-machine.yaml").exists()
    capsys.readouterr()
    assert main(["predict", "--hardware", "this machine", "--model", "llama 3.1 8b", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["hardware"] == "This machine (GeForce RTX 4090)"
    assert d["bandwidth_gb_s"] == 1008 and d["decode_tok_s"] > 50


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_save_then_predict_this_machine_without_gpu(capsys, private_user_data, monkeypatch, real_probe):
    # the measured result of this machine, taken once for the module (re-measuring costs seconds)
    if real_probe.accelerator_found:
        pytest.skip("this machine has an accelerator: the CPU-only save path is not what it takes")
    monkeypatch.setattr(probes, "probe", lambda quick=False, progress=None: real_probe)
    code = main(["--probe", "--save"])
    assert code == 3  # no accelerator, but the CPU entry is saved
    capsys.readouterr()
    assert main(["predict", "--hardware", "this machine", "--model", "llama 3.2 1b", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["hardware"].startswith("This machine (") and d["decode_tok_s"] > 0
    # the saved figures are the measured ones
    assert main(["list", "hardware", "--filter", "this machine", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["kind"] == "cpu" and "measured by advisor --probe" in entry["source"]


def test_quick_probe_cannot_save_a_cpu_only_machine(capsys, monkeypatch, private_user_data):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    code = main(["--probe", "--quick", "--save"])
    assert code == 2 and "without --quick" in capsys.readouterr().err
    assert not (private_user_data / "this-machine.yaml").exists()


def test_unknown_gpu_entry_is_built_from_nvml(nvml):
    nvml(gpus=[dict(fake_pynvml.RTX_4090, name="NVIDIA Quantum 9000", cc=(12, 0))])
    result = probes.probe(quick=True)
    entry = this_machine_entry(user_catalog(), result, match_devices(user_catalog(), result))
    assert entry["family"] == "nvidia-blackwell" and entry["bandwidth_gb_s"] == pytest.approx(1008.1, abs=0.1)
    assert "no compute peak" in entry["notes"]


def test_apple_and_amd_parsers():
    name, cores = apple.parse_displays(json.dumps({"SPDisplaysDataType": [{"sppci_model": "Apple M2 Max",
                                                                           "sppci_cores": "38"}]}))
    assert (name, cores) == ("Apple M2 Max", 38)
    assert apple.parse_displays("not json") == ("", None)
    gpus = amd.parse_rocm_smi(json.dumps({"card0": {"Card Series": "Radeon RX 7900 XTX",
                                                    "VRAM Total Memory (B)": "25753026560"}}))
    assert gpus[0].name == "Radeon RX 7900 XTX" and gpus[0].memory_total_gb == pytest.approx(25.75, abs=0.01)


def test_probe_never_imports_qt_or_the_core():
    import ast
    from pathlib import Path

    for path in Path(probes.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(n.split(".")[0] in ("advisor", "ui", "PySide6", "pyqtgraph") for n in names), path


@pytest.mark.parametrize("features, ratio", [((), 1), (("avx2",), 2), (("avx2", "avx512_vnni"), 4),
                                             (("avx_vnni",), 4), (("asimddp",), 4), (("i8mm", "asimddp"), 4)])
def test_the_cpu_int8_rate_follows_its_dot_product_instructions(features, ratio, monkeypatch):
    """Issue 27: quantized weights run on int8 dot products, so a CPU's int8 rate is its float32 rate
    times the int8 multiply-adds one instruction does per float32 one (measured llama.cpp Q4_K_M
    prefill here was 1.5x the numpy float32 "ceiling" before)."""
    from probes.cpu import CpuInfo

    cpu = CpuInfo(model="Some CPU", architecture="x86_64", cores_logical=8, ram_gb=64.0, copy_gb_s=60.0,
                  add_gb_s=62.0, fp32_gflops=500.0, features=features, threads_used=8)
    assert cpu.int8_per_fp32 == ratio
    monkeypatch.setitem(sys.modules, "pynvml", None)
    result = probes.probe(quick=True)
    result.cpu = cpu
    entry = this_machine_entry(user_catalog(), result, [])
    assert entry.get("int8_dense_tops") == (pytest.approx(0.5 * ratio) if ratio > 1 else None)
    assert (("int8 multiply-adds" in entry["notes"]) == (ratio > 1))


def test_this_machine_reads_its_instruction_set():
    from probes.cpu import describe

    info = describe()
    flags = open("/proc/cpuinfo").read() if sys.platform.startswith("linux") else ""
    assert ("avx2" in info.features) == (" avx2" in flags)


def test_the_saved_cpu_states_its_rates_are_measured_and_what_one_core_reads(monkeypatch):
    """Issue 27: a probed CPU is saved with its measured read bandwidth, its one-core read (what
    --threads scales by), its core count, and the flag that its rates are measured, not datasheet."""
    from probes.cpu import CpuInfo

    cpu = CpuInfo(model="Some CPU", architecture="x86_64", cores_logical=16, cores_physical=8, ram_gb=64.0,
                  copy_gb_s=50.0, add_gb_s=55.0, read_gb_s=60.0, read_1t_gb_s=14.0, fp32_gflops=800.0,
                  features=("avx2", "avx512_vnni", "avx512_bf16"), threads_used=16)
    assert cpu.bandwidth_gb_s == 60.0 and cpu.bf16_per_fp32 == 2
    monkeypatch.setitem(sys.modules, "pynvml", None)
    result = probes.probe(quick=True)
    result.cpu = cpu
    entry = this_machine_entry(user_catalog(), result, [])
    assert (entry["bandwidth_gb_s"], entry["core_bandwidth_gb_s"], entry["cpu_cores"]) == (60.0, 14.0, 8)
    assert entry["rates_measured"] is True and entry["bf16_dense_tflops"] == pytest.approx(1.6)
    assert "read bandwidth" in entry["source"] and "medians" in entry["source"]
    assert "bandwidth_best_gb_s" not in entry   # no best reading measured: none saved

    cpu.read_best_gb_s = 75.0
    entry = this_machine_entry(user_catalog(), result, [])
    assert entry["bandwidth_gb_s"] == 60.0 and entry["bandwidth_best_gb_s"] == 75.0
    assert "best read pass" in entry["source"]


def test_the_best_read_is_sought_over_the_span_and_the_median_is_kept():
    """The read pass runs REPEATS times and on until the span has passed; the median of the passes is
    the typical figure and the fastest the best one."""
    from probes.cpu import CpuInfo, measure_bandwidth

    info = CpuInfo(cores_logical=2)
    t0 = time.perf_counter()
    measure_bandwidth(info, array_bytes=8 * 2**20, repeats=3, best_span_s=0.3)
    assert time.perf_counter() - t0 >= 0.3
    assert info.read_gb_s and info.read_best_gb_s and info.read_best_gb_s >= info.read_gb_s


@pytest.mark.parametrize("total_mib,key", [(12288, "m40-12gb"), (24576, "m40-24gb")])
def test_a_name_the_driver_prints_for_two_sizes_is_matched_by_its_memory(nvml, total_mib, key):
    """Issue 29: nvidia-smi prints "Tesla M40" for the 12 GB card and the 24 GB one; the probe tells
    them apart by the memory the driver reports, and says the match is likely, not exact."""
    nvml(gpus=[dict(fake_pynvml.RTX_4090, name="Tesla M40", total=total_mib * 2**20, bus=384, memclock=3004,
                    cc=(5, 2))])
    m = match_devices(user_catalog(), probes.probe(quick=True))[0]
    assert m.hardware is not None and m.hardware.key == key and m.confidence == "likely"
