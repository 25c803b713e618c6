"""Former name of :mod:`svpg.studies.ablation_analysis` (the studies live apart from the library); importing it warns."""

from svpg.deprecation import moved

moved("svpg.rl.ablation_analysis", "svpg.studies.ablation_analysis", globals())
