"""SB3's ``self.logger.record`` in callbacks: what a callback records reaches TensorBoard at the iteration's steps."""
import warnings

import numpy as np
import pytest
import torch
from stable_baselines3.common.logger import HParam
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import svpg
from svpg.rl.callbacks import BaseCallback

CHEAP = dict(estimator="a2c", samples_per_particle=250, verbose=0)  # an iteration: 4 particles × 250 steps


class Records(BaseCallback):
    """SB3's custom-value example, with every kind of value SB3's TensorBoard output writes."""

    def _on_rollout_end(self):
        self.logger.record_mean("custom/mean_of_two", 1.0)
        self.logger.record_mean("custom/mean_of_two", 2.0 * self.model.iteration + 1)

    def _on_step(self):
        self.logger.record("custom/calls", self.n_calls)
        self.logger.record("custom/returns", torch.tensor([1.0, 2.0, 3.0]))
        self.logger.record("custom/note", f"iteration {self.model.iteration}")
        self.logger.record("custom/hidden", 7.0, exclude="tensorboard")
        self.logger.record("custom/numpy", np.float32(0.5), exclude=("stdout", "csv"))
        if self.n_calls == 1:
            self.logger.record("hparams", HParam({"lr": 0.01}, {"custom/calls": 0}))
        return True


def scalars(events, tag):
    return [(e.step, e.value) for e in events.Scalars(tag)]


def test_a_callback_s_records_reach_tensorboard_at_each_iteration_s_steps(tmp_path):
    callback = Records()
    model = svpg.SVPG("CartPole-v1", tensorboard_log=tmp_path, **CHEAP).learn(2_000, callback=callback)
    assert callback.logger is model.logger and model.logger.get_dir() is None  # no writer after learn
    events = EventAccumulator(str(tmp_path / "SVPG_1")).Reload()
    assert scalars(events, "custom/calls") == [(1000, 1.0), (2000, 2.0)]
    # record_mean averages within an iteration and starts afresh after each dump: (1 + 3) / 2, (1 + 5) / 2
    assert scalars(events, "custom/mean_of_two") == [(1000, 2.0), (2000, 3.0)]
    assert scalars(events, "custom/numpy") == [(1000, 0.5), (2000, 0.5)]
    assert "custom/hidden" not in events.Tags()["scalars"]
    assert "custom/returns" in events.Tags()["histograms"]
    assert "custom/note/text_summary" in events.Tags()["tensors"]
    assert "_hparams_/experiment" in events.PluginTagToContent("hparams")
    assert not model.logger.name_to_value  # nothing left pending


def test_records_without_tensorboard_are_dropped_at_each_dump():
    seen = []

    class Reads(BaseCallback):
        def _on_step(self):
            seen.append(dict(self.logger.name_to_value))  # the previous iteration's value was dumped
            self.logger.record("custom/calls", self.n_calls)
            return True

    svpg.SVPG("CartPole-v1", **CHEAP).learn(2_000, callback=Reads())
    assert seen == [{}, {}]


def test_logger_get_dir_names_the_events_folder_while_learning(tmp_path):
    dirs = []
    svpg.SVPG("CartPole-v1", tensorboard_log=tmp_path, **CHEAP).learn(
        1_000, callback=lambda loc, glob: dirs.append(loc["self"].logger.get_dir()) or True
    )
    assert dirs == [str(tmp_path / "SVPG_1")]


def test_a_value_tensorboard_cannot_take_is_refused_where_it_is_recorded():
    class Bad(BaseCallback):
        def _on_step(self):
            self.logger.record("custom/config", {"lr": 0.01})
            return True

    with pytest.raises(TypeError, match=r"logger.record\('custom/config', <dict>\): record a number"):
        svpg.SVPG("CartPole-v1", **CHEAP).learn(1_000, callback=Bad())


def test_a_callback_written_for_the_former_summary_writer_still_logs_with_a_warning(tmp_path):
    class Former(BaseCallback):
        def _on_step(self):
            self.logger.add_scalar("custom/former", 3.0, self.num_timesteps)
            return True

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        svpg.SVPG("CartPole-v1", tensorboard_log=tmp_path, **CHEAP).learn(1_000, callback=Former())
        svpg.SVPG("CartPole-v1", **CHEAP).learn(1_000, callback=Former())  # no TensorBoard: nothing written
    assert [str(w.message).split(":")[0] for w in caught if w.category is DeprecationWarning] == [
        "self.logger.add_scalar is deprecated"
    ] * 2
    assert scalars(EventAccumulator(str(tmp_path / "SVPG_1")).Reload(), "custom/former") == [(1000, 3.0)]
    with pytest.raises(AttributeError, match="no attribute 'add_nothing'"):
        svpg.SVPG("CartPole-v1", **CHEAP).logger.add_nothing  # noqa: B018


def test_set_logger_sends_every_log_interval_s_scalars_and_the_callbacks_records_to_sb3_s_formats(tmp_path, capsys):
    import csv

    from stable_baselines3.common.logger import configure

    class Calls(BaseCallback):
        def _on_step(self):
            self.logger.record("custom/calls", self.n_calls)
            return True

    model = svpg.SVPG("CartPole-v1", tensorboard_log=tmp_path / "tb", **(CHEAP | {"verbose": 1}))
    model.set_logger(configure(str(tmp_path / "sb3"), ["stdout", "csv"]))
    evaluation = svpg.EvalCallback("CartPole-v1", eval_freq=4, n_eval_episodes=1, verbose=0)  # dumps when it evaluates
    model.learn(4_000, callback=[Calls(), evaluation], log_interval=2)  # 4 iterations: dumps after the 2nd and the 4th
    with open(tmp_path / "sb3" / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(r["time/iterations"], r["time/total_timesteps"], r["custom/calls"]) for r in rows] == [
        ("2", "2000", "2"), ("4", "4000", "4")  # the evaluation's dump writes the 4th: no row of its own
    ]
    assert float(rows[1]["eval/mean_reward"]) == evaluation.last_mean_reward and rows[0]["eval/mean_reward"] == ""
    assert "eval/particle_mean_rewards" not in rows[0]
    assert float(rows[-1]["rollout/ep_rew_mean"]) == pytest.approx(model.scalars[0]["rollout/ep_rew_mean"], rel=1e-6)
    assert "rollout/particle_returns" not in rows[0]  # a histogram: TensorBoard's only
    out = capsys.readouterr().out
    assert "| custom/" in out and "iteration 2: 2,000 steps" not in out  # SB3's table replaces svpg's line
    assert not (tmp_path / "tb").exists()  # its formats replace tensorboard_log, as in SB3
    with pytest.raises(ValueError, match="^set_logger takes Stable-Baselines3's Logger"):
        model.set_logger(model.logger)
