"""analysis.states: a state set is read only when its manifest is there and
every file is the one it records (issue 16, item 5)."""

import json
import os
import unittest
import zlib

import numpy as np

import analysis_test_support as S
from analysis import states


class StatesTest(S.TempDirTest):
    def write_set(self):
        """A set as the mini-app writes it: the .npy files, then states.json."""
        arrays = {"mu": np.arange(6.0).reshape(2, 3), "stream_ids": np.array([0, 1], dtype=np.uint64)}
        files = []
        for name, a in arrays.items():
            path = os.path.join(self.tmp, name + ".npy")
            np.save(path, a)
            with open(path, "rb") as f:
                data = f.read()
            files.append({"name": name + ".npy", "shape": list(a.shape), "bytes": len(data),
                          "crc32": zlib.crc32(data)})
        with open(os.path.join(self.tmp, states.MANIFEST), "w") as f:
            json.dump({"format": states.FORMAT, "format_version": states.FORMAT_VERSION, "files": files}, f)
        return arrays

    def refused(self, *words):
        with self.assertRaises(states.StateSetError) as cm:
            states.load_states(self.tmp)
        for w in words:
            self.assertIn(w, str(cm.exception))

    def test_complete_set_is_read(self):
        arrays = self.write_set()
        got, manifest = states.load_states(self.tmp)
        self.assertEqual(sorted(got), ["mu", "stream_ids"])
        np.testing.assert_array_equal(got["mu"], arrays["mu"])
        self.assertEqual(manifest["format"], "mosaic-states")

    def test_set_without_manifest_is_incomplete(self):
        self.write_set()
        os.remove(os.path.join(self.tmp, states.MANIFEST))
        self.refused(os.path.join(self.tmp, "states.json") + ": missing", "is incomplete")

    def test_file_replaced_after_the_manifest(self):
        self.write_set()
        np.save(os.path.join(self.tmp, "mu.npy"), np.arange(6.0).reshape(2, 3) + 1)  # same size and shape
        self.refused(os.path.join(self.tmp, "mu.npy") + ": CRC-32")

    def test_missing_truncated_and_foreign(self):
        self.write_set()
        path = os.path.join(self.tmp, "stream_ids.npy")
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - 8)
        self.refused(path + ": ", "bytes, the manifest records")
        os.remove(path)
        self.refused(path + ": missing (listed in")
        with open(os.path.join(self.tmp, states.MANIFEST), "w") as f:
            json.dump({"format": "mosaic-checkpoint"}, f)
        self.refused("not a state-set manifest")


if __name__ == "__main__":
    unittest.main()
