"""Former name of :mod:`svpg.studies.sb3` (the studies live apart from the library); importing it warns."""

from svpg.deprecation import moved

moved("svpg.rl.sb3", "svpg.studies.sb3", globals())
