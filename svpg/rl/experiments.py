"""Former name of :mod:`svpg.studies.experiments` (the studies live apart from the library); importing it warns."""

from svpg.deprecation import moved

moved("svpg.rl.experiments", "svpg.studies.experiments", globals())
