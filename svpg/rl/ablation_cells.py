"""Former name of :mod:`svpg.studies.ablation_cells` (the studies live apart from the library); importing it warns."""

from svpg.deprecation import moved

moved("svpg.rl.ablation_cells", "svpg.studies.ablation_cells", globals())
