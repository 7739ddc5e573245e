"""Test-wide settings: quiet third-party deprecation noise."""

import warnings

warnings.filterwarnings('ignore', message='.*[Ee]ventlet.*')
