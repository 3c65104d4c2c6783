"""Image operators: ``topi.image.resize1d`` / ``resize2d`` / ``resize3d``, ``crop_and_resize``,
``affine_grid``, ``grid_sample``."""
from .grid import affine_grid, crop_and_resize, grid_sample  # noqa: F401
from .resize import resize, resize1d, resize2d, resize3d, schedule_resize2d  # noqa: F401
