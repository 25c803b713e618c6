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


def test_sb3_baselines_write_their_curves_and_section_and_skip_finished_seeds(tmp_path, monkeypatch):
    """python -m svpg.studies.sb3: SB3 A2C through the studies' SB3 runner, evaluated every 200 of 400 steps."""
    import csv

    from svpg.studies import sb3

    out = tmp_path / "repro"
    argv = ["--task", "swingup", "--seeds", "1", "--algos", "a2c", "--steps", "400", "--eval-every", "200",
            "--out", str(out)]
    out.mkdir()
    (out / "results.md").write_text("# the grid's results\n")  # as python -m svpg.studies.experiments leaves it
    assert sb3.main(argv) == 0
    with open(out / "sb3" / "curves.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["algo"], r["seed"], r["total_steps"]) for r in rows] == [("a2c", "0", "200"), ("a2c", "0", "400")]
    assert (out / "sb3" / "a2c__seed0.zip").exists()
    final, peak = float(rows[-1]["eval_mean"]), max(float(r["eval_mean"]) for r in rows)
    text = (out / "results.md").read_text()
    assert text.startswith("# the grid's results\n\n## Stable-Baselines3 baselines (400 steps per agent, default "
                           "hyperparameters, 8 envs)\n")
    assert f"| SB3 A2C | 1 | {final:.1f} ± 0.0 | {peak:.1f} |" in text

    def train_again(*args):
        raise AssertionError("a finished seed was trained again")

    monkeypatch.setattr(sb3, "train_one", train_again)
    assert sb3.main(argv) == 0
    assert (out / "results.md").read_text() == text  # the section is replaced, not appended


def test_sb3_baselines_in_two_processes_on_one_folder_keep_each_others_agents(tmp_path, monkeypatch):
    """--algos ppo beside --algos a2c on the same --out: the CSV written last holds both agents' rows and the
    results section both agents' lines (each process merges into the file as it is when its agent ends)."""
    import csv

    from svpg.io import write_csv
    from svpg.studies import sb3

    out = tmp_path / "repro"
    csv_path = out / "sb3" / "curves.csv"
    ppo_row = {"env_id": "x", "algo": "ppo", "seed": 0, "total_steps": 400, "eval_mean": -100.0, "eval_std": 0.0}

    def a2c_while_ppo_finishes(env_id, algo, seed, steps, eval_every, folder):
        write_csv(csv_path, [ppo_row])  # the other process, started at the same time, ends first
        return [{"env_id": env_id, "algo": algo, "seed": seed, "total_steps": steps, "eval_mean": -50.0,
                 "eval_std": 0.0}]

    monkeypatch.setattr(sb3, "train_one", a2c_while_ppo_finishes)
    argv = ["--task", "swingup", "--seeds", "1", "--algos", "a2c", "--steps", "400", "--out", str(out)]
    assert sb3.main(argv) == 0
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["algo"], r["total_steps"], r["eval_mean"]) for r in rows] == [("ppo", "400", "-100.0"),
                                                                          ("a2c", "400", "-50.0")]
    text = (out / "results.md").read_text()
    assert "| SB3 PPO | 1 | -100.0 ± 0.0 | -100.0 |" in text and "| SB3 A2C | 1 | -50.0 ± 0.0 | -50.0 |" in text
