import pytest
import torch


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="needs CUDA: torch.cuda.is_available() is False here")
    for item in items:
        if "tests/gpu/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.gpu)
            if not torch.cuda.is_available():
                item.add_marker(skip)
