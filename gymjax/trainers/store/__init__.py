"""What a training saves, with or without a run directory: files written by atomic rename and never
through a link, the writer lock (:mod:`.files`); checkpoints with their optimizer state and run id
(:mod:`.checkpoint`, with :mod:`.quiet` stopping orbax's noise where it is made); the best evaluated
policy kept beside the last (:mod:`.best`). The trainer (:mod:`gymjax.trainers.ppo`) stands on it;
the run directory (:mod:`gymjax.trainers.runs`) on both."""
