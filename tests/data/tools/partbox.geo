// Two stacked boxes sharing a face, for the partitioned-MSH tests (make_msh_partitions.py):
// physical groups of every dimension, one without a name.
SetFactory("Built-in");
lc = 0.45;
Point(1) = {0,0,0,lc}; Point(2) = {1,0,0,lc}; Point(3) = {1,0.8,0,lc}; Point(4) = {0,0.8,0,lc};
Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {3,4}; Line(4) = {4,1};
Curve Loop(1) = {1,2,3,4}; Plane Surface(1) = {1};
low[] = Extrude {0,0,0.5} { Surface{1}; };
high[] = Extrude {0,0,0.5} { Surface{low[0]}; };
Physical Volume("lower", 21) = {low[1]};
Physical Volume("upper", 22) = {high[1]};
Physical Surface("floor", 11) = {1};
Physical Surface(12) = {high[0]};
Physical Curve("front edge", 31) = {1};
Physical Point("origin", 41) = {1};
