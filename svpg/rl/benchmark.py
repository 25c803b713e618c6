"""Former name of :mod:`svpg.studies.benchmark` (the studies live apart from the library); importing it warns."""

from svpg.deprecation import moved

moved("svpg.rl.benchmark", "svpg.studies.benchmark", globals())
