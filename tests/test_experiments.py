"""The RL reproduction harness: overrides reach every run, outputs are written, re-runs resume."""
import json

from svpg.studies import experiments as harness

TINY = ["--iterations", "2", "--samples-per-particle", "500", "--num-particles", "2", "--alpha", "3",
        "--methods", "s2vgd,independent", "--estimators", "reinforce", "--num-seeds", "1", "--jobs", "1"]


def test_harness_overrides_the_preset_writes_reports_and_skips_finished_runs(tmp_path, capsys):
    out = tmp_path / "repro"
    assert harness.main(["--task", "balance", "--out", str(out), *TINY]) == 0
    for method in ("s2vgd", "independent"):
        cfg = json.loads((out / f"{method}__reinforce__seed0" / "config.json").read_text())
        # typed options override the preset; the rest comes from the preset (balance: horizon 500, 25-10)
        assert (cfg["alpha"], cfg["iterations"], cfg["num_particles"], cfg["samples_per_particle"]) == (3.0, 2, 2, 500)
        assert cfg["hidden"] == [25, 10] and cfg["env_id"] == "svpg/CartPoleBalance-v0" and cfg["method"] == method
    rows = (out / "curves.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 * 2  # header + 2 runs × 2 iterations
    table = (out / "results.md").read_text()
    assert "s2vgd" in table and "independent" in table and (out / "curves.png").stat().st_size > 0
    capsys.readouterr()
    assert harness.main(["--task", "balance", "--out", str(out), *TINY]) == 0
    assert "2 already finished; running 0" in capsys.readouterr().out
