"""``python -m svpg.report gather``: run folders of each front end become rows of their result files, with the
commit and machine they ran at."""

from __future__ import annotations

import json

import pytest

from svpg.report import gather, main, read_rows


def test_gather_benchmark_runs(tmp_path):
    """Run folders of python -m svpg.studies.benchmark become rows of benchmark_results.csv's columns."""
    out = tmp_path / "benchmark"
    for seed, final in ((0, -150.0), (1, -170.0)):
        run = out / "Pendulum-v1" / f"s2vgd__seed{seed}"
        run.mkdir(parents=True)
        job = {"task": "Pendulum-v1", "agent": "s2vgd", "seed": seed, "total_steps": 200000, "eval_episodes": 10}
        (run / "job.json").write_text(json.dumps({**job, "svpg_options": {"lr": 0.001}}))
        result = {"env_steps": 200000, "final": final, "final_particle_mean": final - 5, "best_particle": 1}
        (run / "result.json").write_text(json.dumps({**result, "wall_s": 30.0, **job}))
    into = tmp_path / "results.csv"
    assert main(["gather", str(out), "--into", str(into), "--machine", "test", "--commit", "abc"]) == 0
    rows = read_rows(into)
    assert [(r["task"], r["agent"], r["seed"], r["final"]) for r in rows] == [
        ("Pendulum-v1", "s2vgd", "0", "-150.0"),
        ("Pendulum-v1", "s2vgd", "1", "-170.0"),
    ]
    assert rows[0]["options"] == '{"lr": 0.001}' and rows[0]["machine"] == "test" and rows[0]["commit"] == "abc"
    assert gather([out], into, "test", "abc") == 2  # gathered again: the same units are replaced, not added
    assert len(read_rows(into)) == 2
    other = tmp_path / "other-options" / "Pendulum-v1" / "s2vgd__seed0"  # a tuning run of other options: a unit of its own
    other.mkdir(parents=True)
    job = json.loads((out / "Pendulum-v1" / "s2vgd__seed0" / "job.json").read_text())
    (other / "job.json").write_text(json.dumps({**job, "svpg_options": {"lr": 0.01}}))
    (other / "result.json").write_text((out / "Pendulum-v1" / "s2vgd__seed0" / "result.json").read_text())
    assert gather([tmp_path / "other-options"], into, "test", "abc") == 1
    assert sorted(r["options"] for r in read_rows(into)) == ['{"lr": 0.001}', '{"lr": 0.001}', '{"lr": 0.01}']
    sb3 = tmp_path / "sb3-options" / "Pendulum-v1" / "a2c__seed0"  # an SB3 run of other --sb3-options: its own unit
    sb3.mkdir(parents=True)
    (sb3 / "job.json").write_text(json.dumps({**job, "agent": "a2c", "svpg_options": None, "sb3_options": {"normalize": False}}))
    result = json.loads((out / "Pendulum-v1" / "s2vgd__seed0" / "result.json").read_text())
    (sb3 / "result.json").write_text(json.dumps({**result, "agent": "a2c"}))
    assert gather([tmp_path / "sb3-options"], into, "test", "abc") == 1
    assert [r["options"] for r in read_rows(into) if r["agent"] == "a2c"] == ['{"normalize": false}']


def test_gather_records_each_benchmark_runs_training_curve(tmp_path):
    """A benchmark row's curve: [steps, return, mean return] per progress row, to 0.1: svpg's best particle's and
    the particles' mean training return, SB3's mean training episode return twice; no finished episode: null."""
    out = tmp_path / "benchmark"
    progress = {
        "s2vgd": "iteration,total_steps,rollout/ep_rew_mean,rollout/ep_rew_max\n1,8000,-70.26,-42.84\n2,16000,nan,nan\n",
        "ppo": "total_steps,ep_rew_mean,episodes,wall_s\n10000,13.24,299,22.9\n20000,221.3,56,53.5\n",
    }
    for agent, text in progress.items():
        run = out / "Ant-v5" / f"{agent}__seed0"
        run.mkdir(parents=True)
        job = {"task": "Ant-v5", "agent": agent, "seed": 0, "total_steps": 20000, "eval_episodes": 10}
        (run / "job.json").write_text(json.dumps(job))
        (run / "result.json").write_text(json.dumps({"env_steps": 20000, "final": 1.0, "wall_s": 3.0, **job}))
        (run / "progress.csv").write_text(text)
    into = tmp_path / "results.csv"
    assert gather([out], into, "test", "abc") == 2
    curves = {r["agent"]: json.loads(r["curve"]) for r in read_rows(into)}
    assert curves == {
        "s2vgd": [[8000, -42.8, -70.3], [16000, None, None]],
        "ppo": [[10000, 13.2, 13.2], [20000, 221.3, 221.3]],
    }


def test_gather_records_the_commit_and_machine_each_run_folder_recorded(tmp_path):
    """Each row says where its run folder's units ran (its provenance.jsonl; a run resumed at another commit names
    both, in order); --machine and --commit set every row instead; a folder without records gets this checkout's."""
    from svpg.runs import PROVENANCE_FILE, describe_machine, source_commit

    out = tmp_path / "benchmark"
    for seed in (0, 1):
        run = out / "Pendulum-v1" / f"s2vgd__seed{seed}"
        run.mkdir(parents=True)
        job = {"task": "Pendulum-v1", "agent": "s2vgd", "seed": seed, "total_steps": 200000, "eval_episodes": 10}
        (run / "job.json").write_text(json.dumps(job))
        (run / "result.json").write_text(json.dumps({"env_steps": 200000, "final": -150.0, **job}))
    records = [{"commit": "aaa1111", "machine": "vm"}, {"commit": "bbb2222", "machine": "vm"}]
    (out / "Pendulum-v1" / "s2vgd__seed0" / PROVENANCE_FILE).write_text("".join(json.dumps(r) + "\n" for r in records))
    into = tmp_path / "results.csv"
    assert main(["gather", str(out), "--into", str(into)]) == 0
    rows = {r["seed"]: (r["commit"], r["machine"]) for r in read_rows(into)}
    assert rows == {"0": ("aaa1111 + bbb2222", "vm"), "1": (source_commit(), describe_machine())}
    assert main(["gather", str(out), "--into", str(into), "--machine", "2-core VM", "--commit", "ccc3333"]) == 0
    assert {(r["commit"], r["machine"]) for r in read_rows(into)} == {("ccc3333", "2-core VM")}


def test_gather_bandit_run(tmp_path):
    from svpg.bandits.cli import main as bandit

    options = ["--problem", "wheel", "--delta", "0.7", "--agents", "s2vgd,uniform", "--rounds", "60"]
    options += ["--num-particles", "3", "--train-every", "30", "--train-steps", "1", "--num-seeds", "2"]
    assert bandit([*options, "--progress", "false", "--log-dir", str(tmp_path), "--run-name", "wheel"]) == 0
    into = tmp_path / "bandit.csv"
    assert gather([tmp_path / "wheel"], into) == 4
    rows = read_rows(into)
    from svpg.runs import provenance, read_provenance

    assert read_provenance(tmp_path / "wheel") == [provenance()]  # the in-process loop records what played
    assert {(r["commit"], r["machine"]) for r in rows} == {(provenance()["commit"], provenance()["machine"])}
    assert {(r["agent"], r["seed"]) for r in rows} == {("s2vgd", "0"), ("s2vgd", "1"), ("uniform", "0"), ("uniform", "1")}
    assert all(r["problem"] == "wheel" and r["rounds"] == "60" for r in rows)
    # the options that set what was played (--num-seeds and --progress only say how much and how it ran)
    assert json.loads(rows[0]["options"]) == {"delta": 0.7, "num_particles": 3, "train_every": 30, "train_steps": 1}
    assert {r["delta"] for r in rows} == {"0.7"}  # the wheel's δ, a column of its own
    assert {float(r["normalised_regret"]) for r in rows if r["agent"] == "uniform"} == {100.0}


def test_gather_supervised_run(tmp_path, csv_file):
    from svpg.supervised.cli import main as supervised

    options = ["--dataset", "csv", "--data-path", str(csv_file), "--target", "price", "--num-splits", "2"]
    options += ["--method", "map", "--epochs", "3", "--hidden", "8", "--batch-size", "24", "--progress", "false"]
    assert supervised([*options, "--log-dir", str(tmp_path), "--run-name", "toy"]) == 0
    from svpg.runs import provenance, read_provenance

    assert read_provenance(tmp_path / "toy") == [provenance()]  # the in-process fits record what trained them
    into = tmp_path / "supervised.jsonl"
    assert gather([tmp_path / "toy"], into, "test", "abc") == 2
    rows = read_rows(into)
    assert [(r["method"], r["split"]) for r in rows] == [("map", 0), ("map", 1)]
    assert all(r["dataset"] == "csv" and r["rmse"] > 0 and "test_ll" in r for r in rows)


def test_gather_refuses_what_is_no_run(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["gather", str(tmp_path), "--into", str(tmp_path / "x.csv")])
    assert e.value.code == 2
    assert "is not a run folder" in capsys.readouterr().err


def test_a_benchmark_out_folder_named_sb3_gathers_as_a_benchmark(tmp_path):
    """Only python -m svpg.studies.sb3's folder (curves.csv with an ``algo`` column) is read as one; a benchmark's
    --out of the same name (curves.csv naming an ``agent``) gathers its runs."""
    out = tmp_path / "sb3"
    run = out / "Hopper-v5" / "sac__seed100"
    run.mkdir(parents=True)
    job = {"task": "Hopper-v5", "agent": "sac", "seed": 100, "total_steps": 1000, "eval_episodes": 1}
    (run / "job.json").write_text(json.dumps(job))
    (run / "result.json").write_text(json.dumps({**job, "env_steps": 1000, "final": 421.0, "final_particle_mean": None,
                                                 "best_particle": None, "wall_s": 60.0}))
    (out / "curves.csv").write_text("task,agent,seed,total_steps,return,return_mean\nHopper-v5,sac,100,1000,1.0,1.0\n")
    into = tmp_path / "x.csv"
    assert gather([out], into, "test", "abc") == 1
    assert [(r["agent"], r["final"]) for r in read_rows(into)] == [("sac", "421.0")]


def test_a_machine_names_its_gpus_as_nvidia_smi_lists_them():
    from svpg.runs import describe_gpus

    assert describe_gpus("NVIDIA H200\n") == "1 GPU (NVIDIA H200)"
    assert describe_gpus("NVIDIA H200\nNVIDIA H200\n") == "2 GPUs (NVIDIA H200)"
    assert describe_gpus("NVIDIA A100-SXM4-80GB\nNVIDIA H100 80GB HBM3\n") == (
        "2 GPUs (NVIDIA A100-SXM4-80GB, NVIDIA H100 80GB HBM3)")
    assert describe_gpus("") == describe_gpus("\n") == ""  # no nvidia-smi, or no GPU
