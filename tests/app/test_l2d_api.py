"""The l2d endpoints through gradio_client (inline jobs, micro models of the test profile), and bad input."""
from __future__ import annotations

import pytest
from gradio_client import Client

# problem, steps, solver, tolerance, guidance, task label, estimator, temperature, seed
SOLVE = ("482+917+356=", 4, "midpoint", 0.01, 1.0, "auto", "argmax", 1.0, 0)


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


def test_solve(client):
    answer, table, plot, status = client.predict(*SOLVE, api_name="/l2d_solve")
    assert "Step-0 check" in answer and "equals" in answer and "Base LM" in answer
    rows = table["data"]
    assert [r[0] for r in rows] == [1, 2, 4, 8, 16, 32] and rows[0][1] == "base LM" and rows[0][3] == 0
    assert [r[3] for r in rows[1:]] == [5 * 2 * (n - 1) for n in (2, 4, 8, 16, 32)]  # midpoint NFE, 5 tokens
    assert plot["plot"].startswith("data:image") and "Done" in status
    # an adaptive solver with guidance
    answer, table, _, _ = client.predict("505+287-391=", 8, "dopri5", 0.05, 2.0, "auto", "argmax", 1.0, 1,
                                         api_name="/l2d_solve")
    assert "dopri5 with tolerance 0.05" in answer and "guidance w = 2" in answer
    assert table["data"][-1][0] == "adaptive"


def test_random_problem(client):
    p = client.predict(3, "add", 0, api_name="/l2d_random")
    from engines.l2d import task

    a, b, c, name = task.parse_problem(p)
    assert name == "add" and task.carries(a, b, c) == 3 and task.split_of(a, b, c, name) == "test"


def test_bad_input_is_named(client):
    with pytest.raises(Exception, match="Diffusion steps.*maximum 32"):  # the steps slider's bound, named
        client.predict(SOLVE[0], 40, *SOLVE[2:], api_name="/l2d_solve")
    with pytest.raises(Exception, match="longer than the model's context"):
        client.predict("123+456+789+111+222=", *SOLVE[1:], api_name="/l2d_solve")
    with pytest.raises(Exception, match="may only use digits"):
        client.predict("12*3=", *SOLVE[1:], api_name="/l2d_solve")
    with pytest.raises(Exception, match="not of the form"):
        client.predict("1234+5+6=", *SOLVE[1:], api_name="/l2d_solve")
    with pytest.raises(Exception, match="(?i)guidance.*maximum 5"):  # the guidance slider's bound, named
        client.predict(*SOLVE[:4], 9.0, *SOLVE[5:], api_name="/l2d_solve")
    # the app keeps serving after bad input
    assert "Step-0 check" in client.predict(*SOLVE, api_name="/l2d_solve")[0]


def test_benchmark(client):
    scaling, adaptive, guidance, status = client.predict(50, 1, 5, api_name="/l2d_benchmark")
    for plot in (scaling, adaptive, guidance):
        assert plot["plot"].startswith("data:image")
    assert "Benchmark done" in status and "Base LM" in status
