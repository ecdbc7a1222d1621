"""Student's t distribution (``jax.scipy.stats.t``: ``logpdf`` and ``pdf``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from .. import special as sp
from ._util import promote


def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("t.logpdf", ("x", "df", "loc", "scale"), (x, df, loc, scale))
    y = (x - loc) / scale
    half = 0.5 * (df + 1.0)
    norm = (sp.gammaln(half) - sp.gammaln(0.5 * df) - 0.5 * tnp.log(df * np.pi)
            - tnp.log(scale))
    return norm - half * tnp.log1p(y * y / df)


def pdf(x, df, loc=0, scale=1):
    return tnp.exp(logpdf(x, df, loc, scale))
