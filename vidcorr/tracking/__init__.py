"""Tracks through a video: flows at a frame's own pixels (:mod:`.inversion`), chaining
pair read-outs into tracks with visibility (:mod:`.chain`), the streamed command
(:mod:`vidcorr.apps.track`) and clips with known tracks (:mod:`.clips`)."""
