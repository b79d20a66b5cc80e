"""Stand-ins for what is not on this machine: the scripted agent of the no-key dry run, its file-edit tools, and a
local llama.cpp model server for the real tier."""
