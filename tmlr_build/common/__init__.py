"""Records and text readers both sides of a build use: errors, jobs, archs, signatures, IR text.

Nothing here imports Triton or another folder of tmlr_build.
"""
