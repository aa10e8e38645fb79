"""Scripts that use gymjax as a user would; a package so that tests import them as ``examples.*``
(the repo root is on pytest's path) even where another distribution installed a top-level ``examples``."""
