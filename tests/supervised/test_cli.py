"""``python train.py supervised``: the table, the run folder and the error messages."""
from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

import train
from svpg.supervised import BayesianRegressor
from svpg.supervised.cli import SupervisedConfig, build_parser, main, resolve, split_data
from svpg.supervised.data import DATA_FILES, Dataset, load_boston, standard_splits


@pytest.fixture
def csv_file(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    y = x @ np.array([1.0, -2.0, 0.5]) + 10 + rng.normal(0, 0.1, 60)
    path = tmp_path / "toy.csv"
    lines = ["a,b,c,price"] + [f"{r[0]},{r[1]},{r[2]},{t}" for r, t in zip(x, y)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_writes_table_results_and_models(tmp_path, csv_file, capsys):
    argv = ["supervised", "--dataset", "csv", "--data-path", str(csv_file), "--target", "price",
            "--method", "s2vgd,map", "--num-splits", "2", "--epochs", "3", "--num-particles", "3",
            "--log-dir", str(tmp_path), "--run-name", "t", "--progress", "false"]
    assert train.main(argv) == 0  # dispatched by train.py to svpg.supervised.cli.main
    out = capsys.readouterr().out
    flat = re.sub(" +", " ", out)  # the table's columns are padded to a common width
    assert "| method | test RMSE | test log-likelihood | splits | s / split (median) |" in flat
    assert "| s2vgd (K=1) |" in flat and "| map (M=1) |" in flat and " ± " in flat
    run = tmp_path / "t"
    assert (run / "results.md").read_text() in out
    results = json.loads((run / "results.json").read_text())
    assert [r["split"] for r in results["results"]["s2vgd"]] == [0, 1]
    assert results["results"]["map"][0]["n_test"] == 6
    config = json.loads((run / "config.json").read_text())
    assert config["resolved"]["hidden"] == [50] and config["resolved"]["epochs"] == {"s2vgd": 3, "map": 3}
    model = BayesianRegressor.load(run / "models" / "s2vgd_split01.safetensors")
    assert model.predict(np.zeros((2, 3)))[0].shape == (2,)
    assert list((run / "s2vgd" / "split_00").glob("events.out.tfevents*"))  # training curves of split 0
    assert list((run / "summary").glob("events.out.tfevents*"))  # test metrics of every split


def test_keep_epoch_last_keeps_the_last_epoch_of_every_split(tmp_path, csv_file, capsys):
    argv = ["supervised", "--dataset", "csv", "--data-path", str(csv_file), "--target", "price", "--method", "map",
            "--num-splits", "2", "--epochs", "4", "--validation-fraction", "0.3", "--keep-epoch", "last",
            "--log-dir", str(tmp_path), "--run-name", "t", "--progress", "false", "--save-models", "false"]
    assert train.main(argv) == 0
    run = tmp_path / "t"
    assert json.loads((run / "config.json").read_text())["keep_epoch"] == "last"
    assert [r["best_epoch"] for r in json.loads((run / "results.json").read_text())["results"]["map"]] == [4, 4]
    with pytest.raises(SystemExit) as exit_:
        main(["--dataset", "csv", "--data-path", str(csv_file), "--target", "price", "--keep-epoch", "final"])
    assert exit_.value.code == 2
    assert "--keep-epoch: invalid choice: 'final' (choose from 'best', 'last')" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--target", "cost"], "target column 'cost' is not in toy.csv"),
        (["--target", "price", "--method", "s2vgd,hmc"], "--method 's2vgd,hmc'"),
        (["--target", "price", "--householder", "0"], "--householder must be ≥ 1 for s2vgd"),
        (["--target", "price", "--hidden", "50,x"], "--hidden must be 'auto'"),
        (["--target", "price", "--protocol", "std"], "--protocol 'std': choose from random, standard\n"),
        (["--target", "price", "--weight-prior", "gaussian", "--prior-std", "0"], "--prior-std must be > 0, got 0.0"),
        (["--target", "price", "--protocol", "standard"], "the standard splits exist for boston, concrete, energy, kin8nm, naval, power, protein, wine, yacht, not 'toy.csv'"),
    ],
)
def test_cli_errors_are_clear(tmp_path, csv_file, capsys, extra, message):
    argv = ["--dataset", "csv", "--data-path", str(csv_file), "--log-dir", str(tmp_path), "--progress", "false", *extra]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_weight_prior_reaches_the_particle_methods_only(tmp_path, csv_file):
    """--weight-prior gaussian gives s2vgd and map the fixed N(0, std²) prior; bbb, in the same run, keeps
    its own (posterior options), and the run folder records the choice."""
    argv = ["supervised", "--dataset", "csv", "--data-path", str(csv_file), "--target", "price", "--method",
            "s2vgd,map,bbb", "--num-splits", "1", "--epochs", "2", "--num-particles", "2", "--weight-prior",
            "gaussian", "--prior-std", "0.5", "--log-dir", str(tmp_path), "--run-name", "t", "--progress", "false"]
    assert train.main(argv) == 0
    run = tmp_path / "t"
    for method in ("s2vgd", "map"):
        model = BayesianRegressor.load(run / "models" / f"{method}_split00.safetensors")
        assert (model.weight_prior, model.prior_std) == ("gaussian", 0.5)
        assert not any("log_var_C" in name for name in model._particles().layout)
    assert BayesianRegressor.load(run / "models" / "bbb_split00.safetensors").weight_prior == "auto"
    config = json.loads((run / "config.json").read_text())
    assert (config["weight_prior"], config["prior_std"]) == ("gaussian", 0.5)


def test_a_run_folder_from_before_weight_prior_continues_under_eq14(tmp_path, csv_file):
    """Such a folder's particles were trained under eq. 14, which is not what 'auto' gives a classifier."""
    from svpg.supervised.runfolder import load_config

    argv = ["supervised", "--dataset", "csv", "--data-path", str(csv_file), "--target", "price", "--method", "map",
            "--num-splits", "1", "--epochs", "1", "--log-dir", str(tmp_path), "--run-name", "t", "--progress", "false"]
    assert train.main(argv) == 0
    config_file = tmp_path / "t" / "config.json"
    assert load_config(tmp_path / "t")[0].weight_prior == "auto"
    config = json.loads(config_file.read_text())
    del config["weight_prior"], config["prior_std"]
    config_file.write_text(json.dumps(config))
    assert load_config(tmp_path / "t")[0].weight_prior == "mvg"


def test_csv_path_as_dataset_and_fashion_missing(tmp_path, csv_file, capsys):
    assert main(["--dataset", str(csv_file), "--target", "price", "--num-splits", "1", "--epochs", "1",
                 "--num-particles", "2", "--log-dir", str(tmp_path), "--progress", "false", "--save-models", "false"]) == 0
    capsys.readouterr()


def test_a_missing_data_file_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    """Fashion-MNIST nowhere and its home unreachable (a closed local port, never the internet)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SVPG_DATA_DIR", raising=False)
    closed = tuple(dataclasses.replace(f, urls=(f"http://127.0.0.1:9/{f.path}",)) for f in DATA_FILES["fashion-mnist"])
    monkeypatch.setitem(DATA_FILES, "fashion-mnist", closed)
    assert main(["--dataset", "fashion-mnist", "--data-dir", str(tmp_path / "nowhere"), "--log-dir", str(tmp_path),
                 "--progress", "false"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("train.py supervised: error: Fashion-MNIST train-images-idx3-ubyte")
    assert "fashion-mnist/train-images-idx3-ubyte.gz" in err and "--data-dir" in err and "Traceback" not in err
    assert not (tmp_path / "nowhere").exists() and not list(tmp_path.glob("supervised__*"))


def test_config_help_documents_every_field():
    text = build_parser().format_help()
    for name in SupervisedConfig.__dataclass_fields__:
        assert "--" + name.replace("_", "-") in text


def test_epochs_default_per_data_set_and_override():
    """Boston and Concrete get the epochs chosen on their validation rows, per method; --epochs wins."""
    def toy(name):
        return Dataset(name, np.zeros((50, 2)), np.zeros(50), "regression")

    both = SupervisedConfig(method="s2vgd,svgd")
    assert resolve(both, toy("boston"))["epochs"] == {"s2vgd": 2400, "svgd": 800}
    assert resolve(both, toy("concrete"))["epochs"] == {"s2vgd": 3200, "svgd": 3200}
    assert resolve(SupervisedConfig(method="map"), toy("my.csv"))["epochs"] == {"map": 2400}
    assert resolve(SupervisedConfig(method="s2vgd,svgd", epochs=7), toy("boston"))["epochs"] == {"s2vgd": 7, "svgd": 7}


def test_validation_fraction_default_per_task_and_override():
    """Small regression sets train on every row (chosen by nested validation); classification keeps a
    10 % validation split; an explicit --validation-fraction wins; a bad one is a clear error."""
    small = Dataset("boston", np.zeros((50, 2)), np.zeros(50), "regression")
    images = Dataset("digits", np.zeros((50, 2)), np.zeros(50, dtype=int), "classification")
    assert resolve(SupervisedConfig(), small)["validation_fraction"] == 0.0
    assert resolve(SupervisedConfig(), images)["validation_fraction"] == 0.1
    assert resolve(SupervisedConfig(validation_fraction="0.2"), small)["validation_fraction"] == 0.2
    for bad in ("1.5", "-0.1", "some"):
        with pytest.raises(ValueError, match="--validation-fraction must be 'auto' or a number in"):
            SupervisedConfig(validation_fraction=bad).validate()


def test_the_standard_protocol_uses_the_standard_splits_and_a_resume_keeps_it(tmp_path, capsys):
    """--protocol in any letter case; config.json records it, so a resume (which refuses --protocol) keeps it."""
    cfg = SupervisedConfig(dataset="boston", protocol="Standard").validate()
    data = load_boston()
    train, test = standard_splits("boston")[3]
    x_tr, y_tr, x_te, y_te = split_data(cfg, data, 3)
    np.testing.assert_array_equal(x_tr, data.x[train])
    np.testing.assert_array_equal(y_te, data.y[test])

    argv = ["--dataset", "boston", "--protocol", "STANDARD", "--num-splits", "1", "--epochs", "1", "--num-particles", "2",
            "--max-train", "30", "--save-models", "false", "--log-dir", str(tmp_path), "--run-name", "r", "--progress", "false"]
    assert main(argv) == 0
    run = tmp_path / "r"
    assert json.loads((run / "config.json").read_text())["protocol"] == "standard"
    assert "boston: 1 standard 90/10 splits" in (run / "results.md").read_text()
    assert main(["--resume", str(run), "--num-splits", "21"]) == 2
    assert "--num-splits 21: boston has 20 standard splits" in capsys.readouterr().err
    assert main(["--resume", str(run), "--protocol", "random"]) == 2
    assert "--protocol cannot be given with --resume" in capsys.readouterr().err
    assert main(["--resume", str(run), "--num-splits", "2"]) == 0
    assert json.loads((run / "config.json").read_text())["protocol"] == "standard"
