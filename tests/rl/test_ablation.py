"""The structure ablation (python -m svpg.studies.ablation): cell names, the plan, the statistics, and a tiny
ablation end to end whose paired differences are recomputed by hand from its curves.csv."""
import csv
import json
import math
import shutil
import statistics

import pytest
import torch

from svpg.studies import ablation
from svpg.studies import ablation_analysis as analysis
from svpg.studies.ablation import Cell
from svpg.studies.experiments import job_label, run_folder, unfinished

T_975_DF1 = 12.706204736174707  # Student's t, 97.5 % quantile, 1 degree of freedom (two seeds → one df)
TINY = ["--task", "swingup", "--seeds", "0-1", "--cells", "s2vgd-K2-mvg-a100,svgd", "--estimators", "reinforce",
        "--iterations", "2", "--samples-per-particle", "500", "--num-particles", "2", "--checkpoint-every", "1",
        "--window", "1", "--jobs", "1"]


# -- cells, flags, the plan ----------------------------------------------------------------------------
@pytest.mark.parametrize("name, cell", [
    ("s2vgd-K2-mvg-a100", Cell("s2vgd", 2, "mvg", 100.0)),
    ("s2vgd-K1-flat-a0.5", Cell("s2vgd", 1, "flat", 0.5)),
    ("s2vgd-K0-flat-a1e-05", Cell("s2vgd", 0, "flat", 1e-5)),
    ("svgd", Cell("svgd")),
    ("svgd-star", Cell("svgd-star")),
    ("svgd-star-mvg-a333.3", Cell("svgd-star", None, "mvg", 333.3)),
    ("s2vgd", Cell("s2vgd")),
    ("independent-a3", Cell("independent", alpha=3.0)),
])
def test_cell_names_parse_and_round_trip(name, cell):
    assert Cell.parse(name) == cell and cell.name == name and Cell.parse(cell.name) == cell


@pytest.mark.parametrize("name", ["svgd-K2", "s2vgd-K2-gauss-a1", "s2vgd-mvg-K2", "s2vgd-a0", "s2vgd-a1e400", "sgd",
                                  "s2vgd-K-1", "svgd-star-K4", "s2vgd-a1.2.3", ""])
def test_bad_cell_names_are_refused(name):
    with pytest.raises(ValueError):
        Cell.parse(name)


def test_the_default_grid_and_the_settings_each_cell_sets():
    alphas = ablation.default_alphas(1000.0)
    assert alphas == [300.0, 1000.0, 3000.0]
    cells = ablation.grid_cells((1, 2, 4), ("flat", "mvg"), alphas)
    names = [c.name for c in cells]
    assert len(names) == 3 * 2 * 3 + 2 and names[-2:] == ["svgd", "svgd-star"]
    assert "s2vgd-K4-mvg-a3000" in names and "s2vgd-K1-flat-a300" in names
    assert Cell.parse("s2vgd-K4-mvg-a3000").settings() == {"householder": 4, "prior": "mvg", "alpha": 3000.0}
    assert Cell("svgd").settings() == {} and Cell.parse("svgd-mvg-a10").settings() == {"prior": "mvg", "alpha": 10.0}


def test_the_plan_is_cells_by_estimators_with_one_seed_batch_each(tmp_path):
    cells = ablation.parse_cells("s2vgd-K2-mvg-a300,svgd,svgd-star,svgd")  # repeated: once
    seeds = ablation.parse_seeds("100-104")
    jobs = ablation.plan(tmp_path, "swingup", cells, ("reinforce", "a2c"), seeds, {"iterations": 20})
    assert [(job_label(j), j["estimator"]) for j in jobs] == [
        ("s2vgd-K2-mvg-a300", "a2c"), ("svgd", "a2c"), ("svgd-star", "a2c"),
        ("s2vgd-K2-mvg-a300", "reinforce"), ("svgd", "reinforce"), ("svgd-star", "reinforce")]
    s2vgd, svgd = jobs[0], jobs[1]
    assert all(j["seeds"] == [100, 101, 102, 103, 104] and j["task"] == "swingup" for j in jobs)
    assert s2vgd["method"] == "s2vgd" and s2vgd["overrides"] == {"iterations": 20, "householder": 2, "prior": "mvg", "alpha": 300.0}
    assert svgd["method"] == "svgd" and svgd["overrides"] == {"iterations": 20}
    assert run_folder(tmp_path, job_label(s2vgd), "a2c", 103).name == "s2vgd-K2-mvg-a300__a2c__seed103"
    assert unfinished(s2vgd) == {(False, 0): [100, 101, 102, 103, 104]}  # nothing run yet: one new batch
    json.dumps(jobs)  # JSON-like, for Ray


def test_seed_ranges():
    assert ablation.parse_seeds("100-104") == [100, 101, 102, 103, 104]
    assert ablation.parse_seeds("0-2,7") == [0, 1, 2, 7] and ablation.parse_seeds("3") == [3]
    assert analysis.seeds_text([0, 1, 2, 7]) == "0–2, 7"
    for bad in ("5-1", "x", "", "1,1", "-3", "0-2,2"):
        with pytest.raises(ValueError, match="--seeds"):
            ablation.parse_seeds(bad)


def test_thresholds_and_curve_metrics():
    assert ablation.parse_threshold("90%") == ("fraction", 0.9) and ablation.parse_threshold("-300") == ("return", -300.0)
    for bad in ("0%", "150%", "abc", "nan"):
        with pytest.raises(ValueError, match="--threshold"):
            ablation.parse_threshold(bad)
    # window 2: smoothed best 0.5, 1.5, 2.5, 3.5 ending at iterations 2..5; τ = 2 first reached at iteration 4
    m = analysis.curve_metrics([0, 0, 1, 1, 5], [0, 1, 2, 3, 4], window=2, threshold=2.0)
    assert (m["peak_best"], m["final_best"], m["peak_mean"], m["final_mean"]) == (3.5, 3.5, 3.0, 3.0)
    assert m["iterations_to_threshold"] == 4 and m["iterations"] == 5
    assert math.isnan(analysis.curve_metrics([0, 0], [0, 1], window=10, threshold=2.0)["iterations_to_threshold"])


def test_select_averages_the_peak_best_return_over_estimators():
    def runs(*peaks):
        return {seed: {"peak_best": p} for seed, p in enumerate(peaks)}

    per_run = {  # K1 wins with REINFORCE, K2 with A2C; K2 has the higher average over estimators
        ("s2vgd-K1-flat-a1000", "reinforce"): runs(300, 310), ("s2vgd-K1-flat-a1000", "a2c"): runs(400, 400),
        ("s2vgd-K2-flat-a1000", "reinforce"): runs(290, 290), ("s2vgd-K2-flat-a1000", "a2c"): runs(450, 440),
        ("s2vgd-K4-flat-a1000", "reinforce"): runs(500, 500),  # no A2C runs: not a candidate
        ("svgd", "reinforce"): runs(900, 900), ("svgd", "a2c"): runs(900, 900),  # a control: never selected
    }
    scores = analysis.selection_scores(per_run, ("reinforce", "a2c"))
    assert scores == {"s2vgd-K1-flat-a1000": pytest.approx(352.5), "s2vgd-K2-flat-a1000": pytest.approx(367.5)}


def test_diversity_is_the_mean_over_pairs_and_states_of_the_documented_distances(tmp_path):
    from svpg.core.networks import NetworkSpec
    from svpg.rl.policies import ParticlePolicy, PolicySpec, save_policy

    spec = PolicySpec(3, False, 2, NetworkSpec((3, 5, 2)), 3, (-1.0, -1.0), (1.0, 1.0))
    policy = ParticlePolicy(spec, seed=4)
    with torch.no_grad():
        policy.layout.get(policy.theta, "pi.log_std").copy_(torch.tensor([[0.0, -0.5], [0.3, 0.1], [-1.0, 0.2]]))
    save_policy(policy, tmp_path / "model.safetensors")
    states = torch.randn(7, 3, generator=torch.Generator().manual_seed(0))
    got = analysis.diversity(tmp_path, states)
    theta = policy.theta.detach()
    mu = policy.mode(policy.fast_weights(theta), states.expand(3, 7, 3))
    std = policy.layout.get(theta, "pi.log_std").exp()
    kl, dist, d_theta = [], [], []
    for i in range(3):
        for j in range(3):
            if i != j:
                p, q = torch.distributions.Normal(mu[i], std[i]), torch.distributions.Normal(mu[j], std[j])
                sym = 0.5 * (torch.distributions.kl_divergence(p, q) + torch.distributions.kl_divergence(q, p))
                kl.append(sym.sum(-1).mean().item())
                dist.append((mu[i] - mu[j]).norm(dim=-1).mean().item())
                d_theta.append((theta[i] - theta[j]).norm().item())
    assert got["parameters"] == theta.shape[1]
    assert got["action_kl"] == pytest.approx(statistics.mean(kl), rel=1e-5)
    assert got["action_mean_distance"] == pytest.approx(statistics.mean(dist), rel=1e-5)
    assert got["theta_distance"] == pytest.approx(statistics.mean(d_theta), rel=1e-5)


def test_the_probe_states_are_fixed():
    a = analysis.probe_states("svpg/CartPoleSwingUp-v0", 50)
    assert a.shape == (analysis.STATE_ENVS * 5, 4) and torch.equal(a, analysis.probe_states("svpg/CartPoleSwingUp-v0", 50))
    assert a.std(0).min() > 0  # random actions move the system


@pytest.mark.parametrize("argv, says", [
    (["--cells", "s2vgd-K2-gauss"], "--cells"),
    (["--cells", "svgd-K2"], "--cells"),
    (["--cells", ","], "--cells"),
    (["--seeds", "5-1"], "--seeds"),
    (["--seeds", "x"], "--seeds"),
    (["--alpha", "3"], "--alphas"),
    (["--householder=2"], "--householders"),
    (["--alphas", "0"], "--alphas"),
    (["--householders", "-1"], "--householders"),
    (["--priors", "gauss"], "--priors"),
    (["--threshold", "x"], "--threshold"),
    (["--reference", "nope"], "nope"),
])
def test_bad_flags_give_one_line_errors_and_exit_2(argv, says, tmp_path, capsys):
    base = ["--task", "swingup", "--seeds", "0-1", "--out", str(tmp_path / "out")]
    try:
        status = ablation.main(base + argv)
    except SystemExit as e:  # argparse's own errors
        status = e.code
    err = capsys.readouterr().err
    assert status == 2 and says in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


# -- a tiny ablation end to end ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("ablation") / "out"
    assert ablation.main([*TINY, "--out", str(out)]) == 0
    return out


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_a_tiny_ablation_writes_the_runs_and_the_reports(tiny):
    s2vgd = json.loads((tiny / "s2vgd-K2-mvg-a100__reinforce__seed1" / "config.json").read_text())
    svgd = json.loads((tiny / "svgd__reinforce__seed0" / "config.json").read_text())
    assert (s2vgd["method"], s2vgd["householder"], s2vgd["prior"], s2vgd["alpha"]) == ("s2vgd", 2, "mvg", 100.0)
    assert (svgd["method"], svgd["prior"], svgd["alpha"]) == ("svgd", "flat", 1000.0)  # the preset's
    assert s2vgd["iterations"] == svgd["iterations"] == 2 and s2vgd["env_id"] == "svpg/CartPoleSwingUp-v0"
    table = (tiny / "results.md").read_text()
    assert "| s2vgd-K2-mvg-a100 | reinforce |" in table and "## Paired differences to svgd" in table
    assert (tiny / "curves.png").stat().st_size > 0 and len(read_csv(tiny / "curves.csv")) == 2 * 2 * 2
    assert [json.loads(line)["iterations"] for line in (tiny / "timing" / "svgd__reinforce.jsonl").read_text().splitlines()] == [2]


def test_the_paired_differences_match_a_hand_computation_on_the_csv(tiny):
    curves: dict = {}
    for r in read_csv(tiny / "curves.csv"):
        curves.setdefault((r["cell"], int(r["seed"])), []).append((int(r["iteration"]), float(r["max"]), float(r["mean"])))
    # --window 1: peak = the best iteration, final = the last
    per = {k: {"peak_best": max(b for _, b, _ in v), "final_best": max(v)[1], "final_mean": max(v)[2]} for k, v in curves.items()}
    rows = {r["cell"]: r for r in read_csv(tiny / "cells.csv")}
    assert rows["svgd"]["pairs"] == "0" and rows["s2vgd-K2-mvg-a100"]["pairs"] == "2"
    row = rows["s2vgd-K2-mvg-a100"]
    for metric in ("peak_best", "final_best", "final_mean"):
        d = [per[("s2vgd-K2-mvg-a100", s)][metric] - per[("svgd", s)][metric] for s in (0, 1)]
        half = T_975_DF1 * statistics.stdev(d) / math.sqrt(2)
        mean = statistics.mean(d)
        got = [float(row[f"d_{metric}{suffix}"]) for suffix in ("", "_lo", "_hi")]
        assert got == pytest.approx([mean, mean - half, mean + half], rel=1e-6, abs=1e-6), metric
        values = [per[("s2vgd-K2-mvg-a100", s)][metric] for s in (0, 1)]
        assert float(row[metric]) == pytest.approx(statistics.mean(values), rel=1e-6)
        assert float(row[f"{metric}_se"]) == pytest.approx(statistics.stdev(values) / math.sqrt(2), rel=1e-6, abs=1e-9)


def test_a_rerun_skips_finished_runs_and_select_waits_for_them(tiny, capsys):
    stamps = {p: p.stat().st_mtime_ns for p in tiny.glob("*__seed*/**/*") if p.is_file()}
    assert ablation.main([*TINY, "--out", str(tiny)]) == 0
    assert "4 runs, 4 already finished; running 0" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in tiny.glob("*__seed*/**/*") if p.is_file()} == stamps
    assert ablation.main([*TINY, "--out", str(tiny), "--select"]) == 0
    assert capsys.readouterr().out.strip() == "s2vgd-K2-mvg-a100"  # the one s2vgd cell; svgd is a control
    assert ablation.main([*TINY, "--out", str(tiny), "--select", "--iterations", "3"]) == 1
    assert "4 of 4 runs" in capsys.readouterr().err


def test_by_default_every_cell_runs_with_the_papers_two_estimators(tmp_path, capsys):
    # --select counts the plan's runs without training any: 2 cells × REINFORCE and A2C × 3 seeds
    argv = ["--task", "swingup", "--seeds", "0-2", "--cells", "s2vgd-K1-flat-a300,svgd", "--select"]
    assert ablation.main([*argv, "--out", str(tmp_path / "out")]) == 1
    assert "12 of 12 runs" in capsys.readouterr().err


@pytest.mark.slow
def test_an_interrupted_run_resumes_from_its_last_checkpoint(tiny, tmp_path, capsys):
    out = tmp_path / "copy"
    shutil.copytree(tiny, out)
    run, other = out / "svgd__reinforce__seed1", out / "svgd__reinforce__seed0"
    for path in (run / "checkpoints").glob("iter_000002.*"):  # killed between its two checkpoints
        path.unlink()
    stamps = {p: p.stat().st_mtime_ns for p in other.rglob("*") if p.is_file()}
    assert ablation.main([*TINY, "--out", str(out)]) == 0
    assert "4 runs, 3 already finished; running 1" in capsys.readouterr().out
    assert (run / "checkpoints" / "iter_000002.safetensors").exists() and len(read_csv(run / "progress.csv")) == 2
    assert {p: p.stat().st_mtime_ns for p in other.rglob("*") if p.is_file()} == stamps
    # iteration 2 trained again from iteration 1's checkpoint, alone instead of in a batch of two seeds: the
    # same returns, the SVGD diagnostics up to float summation order
    again, first = (read_csv(d / "progress.csv")[1] for d in (run, tiny / run.name))
    assert {k: v for k, v in again.items() if k.startswith("rollout/")} == {k: v for k, v in first.items() if k.startswith("rollout/")}
    assert {k: float(v) for k, v in again.items() if k != "time/fps"} == pytest.approx(
        {k: float(v) for k, v in first.items() if k != "time/fps"}, rel=1e-4)


@pytest.mark.slow
def test_on_ray_a_relative_out_gives_the_local_runs_and_numbers(tiny, tmp_path, monkeypatch):
    pytest.importorskip("ray")
    monkeypatch.chdir(tmp_path)  # Ray Tune starts each trial in a folder of its own: the runs must still land here
    assert ablation.main([*TINY, "--out", "ray", "--backend", "ray"]) == 0

    def untimed(out):  # every column but the wall-clock one
        return [{k: v for k, v in r.items() if k != "seconds_per_iteration"} for r in read_csv(out / "cells.csv")]

    assert untimed(tmp_path / "ray") == untimed(tiny)
    assert sorted(p.name for p in (tmp_path / "ray").glob("*__seed*")) == sorted(p.name for p in tiny.glob("*__seed*"))
