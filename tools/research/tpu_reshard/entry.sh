#!/bin/bash
# print ENTRY computation of after_optimizations, stripped of metadata
f=$(ls $1/*after_optimizations.txt | grep -v buffer)
awk '/^ENTRY/{p=1} p{print} /^}/{if(p)exit}' $f | sed -E 's/, metadata=\{[^}]*\}//; s/, backend_config=.*$//; s/, frontend_attributes=\{[^}]*\}//; s/S\(1\)//g'
