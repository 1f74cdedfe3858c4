"""The user's overlay adds and overrides entries; user files are written atomically."""

import os

import pytest

from advisor.data.catalog import CATALOG_DIR, user_catalog, load_catalog
from advisor.data.errors import AdvisorError
from advisor.data.userdata import save_entries, user_data_dir, write_atomic

CUSTOM = {
    "key": "my-lab-gpu", "vendor": "NVIDIA", "name": "Lab GPU 9000", "kind": "workstation",
    "family": "nvidia-ada", "memory_gib": 40, "bandwidth_gb_s": 1200, "fp16_dense_tflops": 200,
    "source": "our own measurement, 2026-11-01",
}


def test_user_data_dir_follows_the_environment(private_user_data):
    assert user_data_dir() == private_user_data


def test_overlay_adds_and_overrides(private_user_data):
    save_entries("hardware", [CUSTOM], "custom.yaml")
    override = dict(CUSTOM, key="rtx-4090", name="GeForce RTX 4090", kind="consumer", bandwidth_gb_s=1100,
                    source="user override for the test")
    save_entries("hardware", [override], "custom.yaml")
    cat = user_catalog()
    assert cat.hardware_named("Lab GPU 9000").bandwidth_gb_s == 1200
    assert cat.hardware["rtx-4090"].bandwidth_gb_s == 1100
    assert cat.overridden["hardware"] == ("rtx-4090",)
    assert cat.issues == ()


def test_save_replaces_by_key_and_keeps_the_rest(private_user_data):
    save_entries("hardware", [CUSTOM], "custom.yaml")
    save_entries("hardware", [dict(CUSTOM, key="second", name="Second")], "custom.yaml")
    save_entries("hardware", [dict(CUSTOM, bandwidth_gb_s=999)], "custom.yaml")
    cat = load_catalog(None, private_user_data)
    assert set(cat.hardware) == {"my-lab-gpu", "second"}
    assert cat.hardware["my-lab-gpu"].bandwidth_gb_s == 999


def test_a_bad_user_file_is_reported_and_the_shipped_catalog_still_loads(private_user_data):
    private_user_data.mkdir(parents=True)
    (private_user_data / "broken.yaml").write_text("hardware: [ {key: x, vendor: NVIDIA")
    cat = load_catalog(CATALOG_DIR, private_user_data)
    assert len(cat.hardware) >= 80
    assert any("broken.yaml" in i.file for i in cat.issues)


def test_save_refuses_to_overwrite_an_unreadable_file(private_user_data):
    private_user_data.mkdir(parents=True)
    target = private_user_data / "custom.yaml"
    target.write_text("hardware: [ {oops")
    with pytest.raises(AdvisorError, match="cannot be read"):
        save_entries("hardware", [CUSTOM], "custom.yaml")
    assert target.read_text() == "hardware: [ {oops"  # the user's file is untouched


def test_atomic_write_leaves_no_partial_file_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    write_atomic(target, "first")

    with pytest.raises(TypeError):
        write_atomic(target, 12345)  # not text: the write fails part way
    assert target.read_text() == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temporary file left behind


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_folder_gives_a_clear_error(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    with pytest.raises(AdvisorError, match="cannot write"):
        write_atomic(ro / "x.yaml", "data")


def test_path_under_a_file_gives_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(AdvisorError, match="cannot write"):
        write_atomic(blocker / "sub" / "x.yaml", "data")


def test_a_link_is_written_through_and_kept(tmp_path):
    """Issue 30 (4): `-o` on a symbolic link replaces the file it points to; the link stays a link."""
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    write_atomic(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_devices_pipes_and_folders_are_refused_untouched(tmp_path, kind):
    """Renaming a new file over a device node (`report -o /dev/full` as root), a pipe or a folder
    would replace it: each is refused in one line and left as it was; a link to one too."""
    target = tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    for path in (target, tmp_path / "via-link"):
        if path.name == "via-link":
            path.symlink_to(target)
        with pytest.raises(AdvisorError, match="give the path of a file"):
            write_atomic(path, "x")
    assert (target.is_fifo() if kind == "fifo" else target.is_dir())
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_the_cli_refuses_a_device_as_its_output(tmp_path, capsys):
    """`serve --cases … --out PIPE` and `report -o PIPE`: exit 2, one line, the pipe untouched."""
    from advisor.cli.main import main

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    cases = tmp_path / "in.csv"
    cases.write_text("hardware,model,prompt,output,concurrency\nH100 SXM,llama 3.1 8b,1000,200,4\n")
    assert main(["serve", "--cases", str(cases), "--out", str(pipe)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a regular file" in err[0]
    assert pipe.is_fifo()


def test_parallel_saves_keep_every_entry(private_user_data):
    """Issue 30 (2): ten `import-model --save` at once all said "saved"; three or four survived.
    Ten processes save one entry each into the same file: all ten are there."""
    import subprocess
    import sys

    code = ("import sys; from advisor.data.userdata import save_entries; "
            "save_entries('hardware', [{'key': f'box-{sys.argv[1]}', 'name': f'Box {sys.argv[1]}'}], 'hardware.yaml')")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(i)], env={**os.environ}) for i in range(10)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    import yaml

    doc = yaml.safe_load((private_user_data / "hardware.yaml").read_text())
    assert sorted(e["key"] for e in doc["hardware"]) == sorted(f"box-{i}" for i in range(10))
    assert not [p for p in private_user_data.iterdir() if p.name.endswith(".tmp")]


def test_a_held_lock_times_out_with_one_line(private_user_data):
    from advisor.data.userdata import file_lock

    path = private_user_data / "hardware.yaml"
    with file_lock(path):
        # another process waiting on it gives up after its timeout with a clear message
        import subprocess
        import sys

        code = ("from advisor.data.userdata import file_lock; from pathlib import Path; import sys\n"
                "try:\n    with file_lock(Path(sys.argv[1]), timeout_s=0.3): pass\n"
                "except Exception as e: print(e); sys.exit(3)")
        r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and "being written by another advisor" in r.stdout
