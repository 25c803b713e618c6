"""Former name of :mod:`svpg.studies.ablation` (the studies live apart from the library); importing it warns."""

from svpg.deprecation import moved

moved("svpg.rl.ablation", "svpg.studies.ablation", globals())
