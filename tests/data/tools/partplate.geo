// A 2 x 1 quad plate in two partitions: the smallest partitioned file with interface elements.
Point(1) = {0,0,0,1}; Point(2) = {2,0,0,1}; Point(3) = {2,1,0,1}; Point(4) = {0,1,0,1};
Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {3,4}; Line(4) = {4,1};
Curve Loop(1) = {1,2,3,4}; Plane Surface(1) = {1};
Transfinite Curve{1,3} = 3; Transfinite Curve{2,4} = 2; Transfinite Surface{1}; Recombine Surface{1};
Physical Curve("bottom", 5) = {1};
Physical Surface("plate", 6) = {1};
