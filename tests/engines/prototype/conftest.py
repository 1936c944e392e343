import pytest


@pytest.fixture(scope="session")
def encoder():
    from engines.prototype.encoder import get_encoder

    return get_encoder()
