"""Supervised Bayesian neural networks (§5.1–5.2 of S²VGD): particles on the shared particle core, or the
parametric posteriors the papers compare with (:mod:`svpg.core.variational`); ``BNN_METHODS`` lists them all
(``METHODS``, its former name, still works with a DeprecationWarning).

Paper: https://proceedings.mlr.press/v84/zhang18a.html

    from svpg.supervised import BayesianRegressor, load_dataset
    data = load_dataset("boston")
    model = BayesianRegressor(method="s2vgd", householder=1).fit(data.x, data.y)   # or method="vmg", "bbb", …
    mean, std = model.predict(data.x)
"""

from svpg.deprecation import renamed
from svpg.supervised.data import Dataset, Standardizer, load_dataset, standard_splits, train_test_splits
from svpg.supervised.models import BNN_METHODS, BayesianClassifier, BayesianRegressor

__all__ = [
    "BayesianClassifier",
    "BayesianRegressor",
    "BNN_METHODS",
    "Dataset",
    "Standardizer",
    "load_dataset",
    "standard_splits",
    "train_test_splits",
]

__getattr__ = renamed(__name__, {"METHODS": "BNN_METHODS"}, globals())  # the former name
