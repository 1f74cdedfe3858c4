"""Issue 16's names: product names, sizes in names, variants that are different products."""

import pytest

from advisor.data.errors import UnknownName
from advisor.data.names import memory_sizes, strip_mac_product, tokens


@pytest.mark.parametrize("query,key,memory_gib", [
    # Mac product names: the chip decides; a chip without its bin is the catalog's default bin
    ("Mac mini M4 Pro", "apple-m4-pro-16c", 64),  # issue 29: the base bin (12-core CPU/16-core GPU)
    ("MacBook Air M3", "apple-m3-10c", 24),
    ("MacBook Pro M3 Max", "apple-m3-max-40c", 128),
    ("MacBook Pro 16-inch M3 Max", "apple-m3-max-40c", 128),
    ("Mac Studio M2 Ultra 192GB", "apple-m2-ultra-76c", 192),
    ("Mac Pro M2 Ultra", "apple-m2-ultra-76c", 192),
    ("iMac M4", "apple-m4-10c", 32),
    # "Tesla" prefixes, GTX and Titan
    ("Tesla T4", "t4-16gb", 16),
    ("Tesla V100", "v100-sxm2-32gb", 32),
    ("Tesla P40", "p40-24gb", 24),
    ("GTX 1080 Ti", "gtx-1080-ti", 11),
    ("Titan RTX", "titan-rtx", 24),
    # sizes in names: the size chooses the configuration, and among bins the one that ships with it
    ("M3 Max 40-core 64GB", "apple-m3-max-40c", 64),
    ("M3 Max 48GB", "apple-m3-max-40c", 48),
    ("M3 Max 36GB", "apple-m3-max-30c", 36),
    ("M3 Max 30-core 96 GB", "apple-m3-max-30c", 96),
    ("MacBook Pro M4 Pro 48GB", "apple-m4-pro-16c", 48),  # issue 29: both bins ship 48 GB; the base
    ("Mac mini M4 16GB", "apple-m4-10c", 16),
    ("M2 Ultra 76-Core GPU 192GB", "apple-m2-ultra-76c", 192),
    ("RTX 3060 12GB", "rtx-3060-12gb", 12),
    ("4060 Ti 8GB", "rtx-4060-ti-8gb", 8),
    ("4060 Ti 16GB", "rtx-4060-ti-16gb", 16),
    ("RTX 2060 12GB", "rtx-2060-12gb", 12),
    ("RX 7600 XT", "rx-7600-xt", 16),
    # nvidia-smi's name: the 480 GB is the module's CPU memory, not a size of this GPU
    ("NVIDIA GH200 480GB", "gh200-96gb", 96),
])
def test_every_issue_16_name_resolves_to_its_entry_and_size(cat, query, key, memory_gib):
    if key not in cat.hardware:
        pytest.skip(f"{key} is not in the catalog")
    hw = cat.hardware_named(query)
    assert (hw.key, hw.memory_gib) == (key, memory_gib)


@pytest.mark.parametrize("query,not_key,memory_gib,message", [
    ("RTX 3050 8GB", "rtx-3050-laptop-6gb", 8, "8 GB"),
    ("RX 7600", "rx-7600-xt", 8, "different product"),
    ("RTX 3060 8GB", "rtx-3060-12gb", 8, "different product"),  # the catalog has the 8 GB Ti
])
def test_a_size_or_variant_the_name_lacks_is_not_another_product(cat, query, not_key, memory_gib, message):
    """An 8 GB desktop RTX 3050 is not the 6 GB laptop part, an RX 7600 not the 16 GB XT: the name
    resolves to an entry of that size where the catalog has one, and is refused otherwise."""
    try:
        hw = cat.hardware_named(query)
    except UnknownName as exc:
        assert message in str(exc)
        return
    assert hw.key != not_key and hw.memory_gib == memory_gib


def test_variants_are_listed_not_picked(cat):
    with pytest.raises(UnknownName, match="different products") as err:
        cat.hardware_named("RX 7900")
    assert {"Radeon RX 7900 XT", "Radeon RX 7900 XTX"} <= set(err.value.candidates)
    assert cat.hardware_named("3090").key == "rtx-3090"  # the plain card still wins over its Ti


def test_a_mac_without_its_chip_says_so(cat):
    with pytest.raises(UnknownName, match="names a Mac, not its chip"):
        cat.hardware_named("Mac mini")
    with pytest.raises(UnknownName, match="names a Mac"):
        cat.hardware_named("MacBook Pro 14-inch")


def test_what_the_name_left_open_is_said(cat):
    hw = cat.hardware_named("MacBook Pro M3 Max")
    assert any("30-core" in a and "40-core" in a for a in hw.assumed)  # the bin
    assert any(a.startswith("assumed 128 GB") and "48, 64 GB" in a for a in hw.assumed)  # the size
    assert cat.hardware_named("M3 Max 40-core 64GB").assumed == ()
    assert cat.hardware_named("M3 Max 40-core", memory_gib=128).assumed == ()
    assert cat.hardware_named("rtx 4090").assumed == ()


def test_sizes_and_products_parse():
    assert memory_sizes(tokens("M3 Max 40-core 64GB")) == [64]
    assert memory_sizes(tokens("M2 Ultra 192 GB")) == [192]
    assert memory_sizes(tokens("RTX 3060 12GiB")) == [12]
    assert memory_sizes(tokens("M3 Max 40-core")) == []
    assert strip_mac_product(tokens("Mac mini M4 Pro")) == ["m", "4", "pro"]
    assert strip_mac_product(tokens("MacBook Pro 16-inch M3 Max")) == ["m", "3", "max"]
    assert strip_mac_product(tokens("Mac Studio (2023) M2 Ultra")) == ["m", "2", "ultra"]
    assert strip_mac_product(tokens("Radeon Pro W7900")) == tokens("Radeon Pro W7900")


def test_two_sizes_in_one_name_are_refused(cat):
    with pytest.raises(UnknownName, match="several memory sizes"):
        cat.hardware_named("M3 Max 48GB 64GB")


def test_an_entry_named_like_a_product_is_found_as_typed(cat):
    """A user's own entry called "Mac mini" or "Mac mini M4 Pro" is matched before the product name
    is dropped."""
    import dataclasses

    from advisor.data.names import NameIndex

    mine = dataclasses.replace(cat.hardware["apple-m4-pro-16c"], key="my-mini", name="Mac mini M4 Pro",
                               aliases=("Mac mini",))
    idx = NameIndex("hardware", [*cat.hardware.values(), mine])
    assert idx.resolve("Mac mini M4 Pro") == "my-mini" and idx.resolve("mac mini") == "my-mini"
    assert idx.resolve("MacBook Pro M4 Pro") == "apple-m4-pro-16c"  # the base bin (issue 29)
