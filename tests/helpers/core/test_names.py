"""Names that become folders: one safe path component, or one clear error."""

import pytest

from helpers.core.names import check_inside, check_name


@pytest.mark.parametrize("name", ["django__django-11099", "house__ledger-0001", "train_0", "page-0-0001", "v1.2"])
def test_dataset_ids_and_run_ids_are_accepted_as_they_are(name):
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["../x", "/", "a/b", "", "x" * 300, "..", ".env", "a b", "a\\b", "a\nb", None, 3])
def test_names_that_could_escape_their_folder_are_refused_with_the_fix(name):
    with pytest.raises(ValueError, match=r"Invalid experiment .*letters, digits"):
        check_name(name, "experiment")


def test_check_inside_accepts_only_paths_strictly_inside(tmp_path):
    assert check_inside(tmp_path / "a" / "b", tmp_path) == (tmp_path / "a" / "b").resolve()
    for outside in (tmp_path, tmp_path / "..", tmp_path / "a" / ".." / ".."):
        with pytest.raises(ValueError, match="not inside"):
            check_inside(outside, tmp_path)


def test_a_symlink_out_of_the_folder_is_outside(tmp_path):
    (tmp_path / "link").symlink_to("/")
    with pytest.raises(ValueError):
        check_inside(tmp_path / "link", tmp_path)
