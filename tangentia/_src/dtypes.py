"""``jax._src.dtypes``, for the names libraries import from there (equinox:
``TypePromotionError``): tangentia's ``dtypes`` module."""
from ..dtypes import *  # noqa: F401,F403
from ..dtypes import TypePromotionError  # noqa: F401
