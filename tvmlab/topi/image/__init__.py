"""Image operators: ``topi.image.resize2d``."""
from .resize import resize2d, schedule_resize2d  # noqa: F401
