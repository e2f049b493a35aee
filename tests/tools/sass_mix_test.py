#!/usr/bin/env python3
"""tools/sass_mix.py's loop finder on a hand-written disassembly (no nvcc or GPU needed): two
kernels whose addresses overlap, as cuobjdump prints a module with a lift kernel and a main
kernel. The main loop must hold only its own kernel's instructions."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import sass_mix  # noqa: E402

SASS = """
        code for sm_90
                Function : main_kernel
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0020*/                   HMMA.SP.16832.F32 R8, R4, R12, R8, R16, 0x0 ;
        /*0030*/                   IADD3 R2, R2, 0x10, RZ ;
        /*0040*/              @!P0 BRA 0x10 ;
        /*0050*/                   EXIT ;
                Function : lift_kernel
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   IMAD R3, R2, 0x4, RZ ;
        /*0020*/                   IMAD R4, R3, 0x4, RZ ;
        /*0030*/                   IMAD R5, R4, 0x4, RZ ;
        /*0040*/                   IMAD R6, R5, 0x4, RZ ;
        /*0050*/                   IMAD R7, R6, 0x4, RZ ;
        /*0060*/              @!P1 BRA 0x0 ;
        /*0070*/                   EXIT ;
"""


class LoopFinder(unittest.TestCase):
    def test_functions_are_cut_apart(self):
        names = [name for name, _ in sass_mix.functions(SASS)]
        self.assertEqual(names, ["main_kernel", "lift_kernel"])

    def test_the_tensor_loop_stays_inside_its_kernel(self):
        name, body = sass_mix.main_loop(SASS)
        self.assertEqual(name, "main_kernel")
        self.assertEqual([sass_mix.opcode(t) for t in body], ["LDG", "HMMA", "IADD3", "BRA"])

    def test_of_two_tensor_loops_the_shortest(self):
        # a try-wait retry block after the epilogue branches back into the loop: its span holds
        # the same tensor instructions and the epilogue as well
        text = SASS.replace(
            "        /*0050*/                   EXIT ;\n                Function : lift_kernel",
            "        /*0050*/                   STG.E desc[UR4][R2.64], R8 ;\n"
            "        /*0060*/                   EXIT ;\n"
            "        /*0070*/                   BRA 0x10 ;\n"
            "                Function : lift_kernel")
        name, body = sass_mix.main_loop(text)
        self.assertEqual(name, "main_kernel")
        self.assertEqual([sass_mix.opcode(t) for t in body], ["LDG", "HMMA", "IADD3", "BRA"])

    def test_without_tensor_instructions_the_longest_loop(self):
        name, body = sass_mix.main_loop(SASS.replace("HMMA.SP.16832.F32", "FFMA"))
        self.assertEqual(name, "lift_kernel")
        self.assertEqual(len(body), 7)

    def test_a_single_unnamed_listing(self):
        text = SASS.split("Function : lift_kernel")[0].replace("Function : main_kernel", "")
        name, body = sass_mix.main_loop(text)
        self.assertEqual(name, "")
        self.assertEqual(len(body), 4)


if __name__ == "__main__":
    unittest.main()
